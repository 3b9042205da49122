// Activation, as keras.layers.Activation: applies an activation function as a layer.
//
//   layers::Activation relu("relu");
//   Tensor y = relu(x);
//   model.add<layers::Activation>("softmax");
#pragma once

#include <optional>
#include <string>

#include "framework/layers/activations.h"
#include "framework/layers/layer.h"

namespace kestrel::layers {

struct ActivationOptions {
  std::string name;
  /// The precision policy (unset: the parent's, else the global one; layers/dtype_policy.h).
  std::optional<DTypePolicy> dtype;
};

class Activation : public Layer {
 public:
  /// The activation by Keras name ("relu") or an ActivationFn.
  explicit Activation(ActivationFn activation, ActivationOptions options = {});
  Tensor call(const Tensor& x, bool training) override { return activation_(x); }

  nlohmann::json get_config() const override;
  static Activation from_config(const nlohmann::json& config);

  const ActivationFn& activation() const { return activation_; }

 private:
  ActivationFn activation_;
};

}  // namespace kestrel::layers
