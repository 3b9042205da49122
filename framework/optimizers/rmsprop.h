// RMSprop: gradients scaled by a running root mean square, as keras.optimizers.RMSprop.
//
//   optimizers::RMSprop rmsprop({.learning_rate = 1e-3, .momentum = 0.9, .centered = true});
//   rmsprop.apply(grads, model.trainable_weights());
//
// Update, with slots v ("velocity"), a ("average_gradient", centered only) and m ("momentum",
// momentum > 0 only):
//   v = rho * v + (1 - rho) * g^2
//   centered:  a = rho * a + (1 - rho) * g;  denominator = v - a^2 + epsilon
//   otherwise:                               denominator = v + epsilon
//   increment = lr * g / sqrt(denominator)
//   momentum > 0:  m = momentum * m + increment;  var -= m
//   otherwise:                                    var -= increment
//
// Slots are created as Keras creates them: every "velocity", then every "momentum", then every
// "average_gradient".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "framework/optimizers/optimizer.h"

namespace kestrel::optimizers {

/// RMSprop's options, in keras.optimizers.RMSprop's argument order and with its defaults.
struct RMSpropOptions {
  LearningRate learning_rate = 0.001;
  double rho = 0.9;       ///< in [0, 1)
  double momentum = 0.0;  ///< in [0, 1]
  double epsilon = 1e-7;  ///< >= 0, added under the square root
  bool centered = false;
  std::optional<double> weight_decay = std::nullopt;
  std::optional<double> clipnorm = std::nullopt;
  std::optional<double> clipvalue = std::nullopt;
  std::optional<double> global_clipnorm = std::nullopt;
  /// Apply every k-th call, with the mean of the k calls' gradients (Optimizer::apply); >= 1.
  std::optional<int> gradient_accumulation_steps = std::nullopt;
  std::string name = "";  ///< empty: "rmsprop"
};

class RMSprop : public Optimizer {
 public:
  /// Throws ValueError, naming the option, for rho outside [0, 1), momentum outside [0, 1], a
  /// negative epsilon or a bad common option.
  explicit RMSprop(RMSpropOptions options = {});

  /// The options as constructed.
  const RMSpropOptions& options() const { return options_; }
  /// Keras's keys: the base's (Optimizer::get_config), then rho, momentum, epsilon and centered.
  nlohmann::json get_config() const override;
  /// From a config get_config() or Keras wrote; Keras's defaults fill absent keys.
  static RMSprop from_config(const nlohmann::json& config);

 protected:
  void build_slots(const std::vector<Variable>& variables) override;
  void update_step(const Tensor& gradient, const Variable& variable, std::size_t index,
                   const Tensor& learning_rate) override;

 private:
  RMSpropOptions options_;
  std::vector<Variable> velocities_;
  std::vector<Variable> momentums_;          // momentum > 0 only
  std::vector<Variable> average_gradients_;  // centered only
};

}  // namespace kestrel::optimizers
