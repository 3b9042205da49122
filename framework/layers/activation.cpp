#include "framework/layers/activation.h"

#include <utility>

#include "framework/layers/serialization.h"

namespace kestrel::layers {

Activation::Activation(ActivationFn activation, ActivationOptions options)
    : Layer("Activation", options.name, options.dtype), activation_(std::move(activation)) {}

nlohmann::json Activation::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["activation"] = serialization::to_config(activation_, error_prefix());
  return config;
}

Activation Activation::from_config(const nlohmann::json& config) {
  using namespace serialization;  // NOLINT(google-build-using-namespace): the config helpers read as Keras's
  const std::string what = "layer class 'Activation'";
  LayerBase base = layer_base_from_config(config, what);
  check_null(config, {"activity_regularizer"}, what);
  return Activation(activation_from_config(required<nlohmann::json>(config, "activation", what), what),
                    {.name = std::move(base.name), .dtype = base.dtype});
}

}  // namespace kestrel::layers
