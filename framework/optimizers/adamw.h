// AdamW: Adam with decoupled weight decay, as keras.optimizers.AdamW.
//
//   optimizers::AdamW adamw({.learning_rate = 1e-3, .weight_decay = 0.01});
//   adamw.apply(grads, model.trainable_weights());
//
// Each step first decays every updated variable, var -= lr * weight_decay * var (the Optimizer
// base does it, before the update), then applies Adam's update; see adam.h.
#pragma once

#include <optional>
#include <string>

#include "framework/optimizers/adam.h"

namespace kestrel::optimizers {

/// AdamW's options, in keras.optimizers.AdamW's argument order and with its defaults.
struct AdamWOptions {
  LearningRate learning_rate = 0.001;
  double weight_decay = 0.004;  ///< >= 0
  double beta_1 = 0.9;          ///< in [0, 1)
  double beta_2 = 0.999;        ///< in [0, 1)
  double epsilon = 1e-7;        ///< >= 0, added to sqrt(v)
  bool amsgrad = false;
  std::optional<double> clipnorm = std::nullopt;
  std::optional<double> clipvalue = std::nullopt;
  std::optional<double> global_clipnorm = std::nullopt;
  /// Apply every k-th call, with the mean of the k calls' gradients (Optimizer::apply); >= 1.
  std::optional<int> gradient_accumulation_steps = std::nullopt;
  std::string name = "";  ///< empty: "adamw"
};

class AdamW : public Adam {
 public:
  /// Throws ValueError, naming the option, as Adam does and for a negative weight_decay.
  explicit AdamW(AdamWOptions options = {});

  /// From a config get_config() (Adam's keys) or Keras wrote; Keras's defaults fill absent keys,
  /// weight_decay 0.004 among them.
  static AdamW from_config(const nlohmann::json& config);
};

}  // namespace kestrel::optimizers
