// SGD: gradient descent, with optional (Nesterov) momentum, as keras.optimizers.SGD.
//
//   optimizers::SGD sgd({.learning_rate = 0.1, .momentum = 0.9, .nesterov = true});
//   sgd.apply(grads, model.trainable_weights());
//
// Update, with m a "momentum" slot that exists only when momentum > 0:
//   momentum == 0:  var -= lr * g
//   momentum  > 0:  m = momentum * m - lr * g;  var += m
//   nesterov:       m = momentum * m - lr * g;  var += momentum * m - lr * g
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "framework/optimizers/optimizer.h"

namespace kestrel::optimizers {

/// SGD's options, in keras.optimizers.SGD's argument order and with its defaults.
struct SGDOptions {
  LearningRate learning_rate = 0.01;
  double momentum = 0.0;  ///< in [0, 1]
  bool nesterov = false;
  std::optional<double> weight_decay = std::nullopt;
  std::optional<double> clipnorm = std::nullopt;
  std::optional<double> clipvalue = std::nullopt;
  std::optional<double> global_clipnorm = std::nullopt;
  /// Apply every k-th call, with the mean of the k calls' gradients (Optimizer::apply); >= 1.
  std::optional<int> gradient_accumulation_steps = std::nullopt;
  std::string name = "";  ///< empty: "SGD"
};

class SGD : public Optimizer {
 public:
  /// Throws ValueError, naming the option, when momentum is outside [0, 1] or a common option is bad.
  explicit SGD(SGDOptions options = {});

  /// The options as constructed.
  const SGDOptions& options() const { return options_; }
  /// Keras's keys: the base's (Optimizer::get_config), then momentum and nesterov.
  nlohmann::json get_config() const override;
  /// From a config get_config() or Keras wrote; Keras's defaults fill absent keys.
  static SGD from_config(const nlohmann::json& config);

 protected:
  void build_slots(const std::vector<Variable>& variables) override;
  void update_step(const Tensor& gradient, const Variable& variable, std::size_t index,
                   const Tensor& learning_rate) override;

 private:
  SGDOptions options_;
  std::vector<Variable> momentums_;  // one per variable, empty when momentum == 0
};

}  // namespace kestrel::optimizers
