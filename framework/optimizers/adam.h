// Adam: adaptive moment estimation, as keras.optimizers.Adam.
//
//   optimizers::Adam adam({.learning_rate = 3e-4, .global_clipnorm = 1.0});
//   adam.apply(grads, model.trainable_weights());
//
// Update at step t = iterations + 1, with slots m ("momentum") and v ("velocity"):
//   alpha = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)      (bias correction folded into the rate)
//   m += (g - m) * (1 - beta_1)
//   v += (g^2 - v) * (1 - beta_2)
//   v_hat = max(v_hat, v); v = v_hat                      (amsgrad only: slot "velocity_hat")
//   var -= m * alpha / (sqrt(v) + epsilon)
//
// Slots are created as Keras creates them: "momentum" then "velocity" for each variable in
// turn, then (amsgrad) every "velocity_hat".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "framework/optimizers/optimizer.h"

namespace kestrel::optimizers {

/// Adam's options, in keras.optimizers.Adam's argument order and with its defaults.
struct AdamOptions {
  LearningRate learning_rate = 0.001;
  double beta_1 = 0.9;    ///< in [0, 1)
  double beta_2 = 0.999;  ///< in [0, 1)
  double epsilon = 1e-7;  ///< >= 0, added to sqrt(v)
  bool amsgrad = false;
  std::optional<double> weight_decay = std::nullopt;
  std::optional<double> clipnorm = std::nullopt;
  std::optional<double> clipvalue = std::nullopt;
  std::optional<double> global_clipnorm = std::nullopt;
  /// Apply every k-th call, with the mean of the k calls' gradients (Optimizer::apply); >= 1.
  std::optional<int> gradient_accumulation_steps = std::nullopt;
  std::string name = "";  ///< empty: "adam"
};

class Adam : public Optimizer {
 public:
  /// Throws ValueError, naming the option, for a beta outside [0, 1), a negative epsilon or a bad
  /// common option.
  explicit Adam(AdamOptions options = {});

  /// The options as constructed.
  const AdamOptions& options() const { return options_; }
  /// Keras's keys: the base's (Optimizer::get_config), then beta_1, beta_2, epsilon and amsgrad.
  nlohmann::json get_config() const override;
  /// From a config get_config() or Keras wrote; Keras's defaults fill absent keys.
  static Adam from_config(const nlohmann::json& config);

 protected:
  /// For AdamW: the same update under another default name.
  Adam(std::string default_name, AdamOptions options);

  void build_slots(const std::vector<Variable>& variables) override;
  void update_step(const Tensor& gradient, const Variable& variable, std::size_t index,
                   const Tensor& learning_rate) override;

 private:
  AdamOptions options_;
  std::vector<Variable> momentums_;
  std::vector<Variable> velocities_;
  std::vector<Variable> velocity_hats_;  // amsgrad only
};

}  // namespace kestrel::optimizers
