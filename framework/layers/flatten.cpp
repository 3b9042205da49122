#include "framework/layers/flatten.h"

#include <string>
#include <utility>

#include "framework/core/error.h"
#include "framework/layers/serialization.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::layers {

Flatten::Flatten(FlattenOptions options) : Layer("Flatten", options.name, options.dtype) {}

Tensor Flatten::call(const Tensor& x, bool training) {
  if (x.rank() < 1) {
    throw ShapeError("layer '" + name() + "' (Flatten): input is a scalar; Flatten needs a batch dim first");
  }
  // The size is computed from the static shape rather than with -1, which is ambiguous for a batch of 0.
  std::int64_t features = 1;
  for (int d = 1; d < x.rank(); ++d) features *= x.shape()[d];
  return ops::reshape(x, {x.shape()[0], features});
}

nlohmann::json Flatten::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["data_format"] = "channels_last";
  return config;
}

Flatten Flatten::from_config(const nlohmann::json& config) {
  using namespace serialization;  // NOLINT(google-build-using-namespace): the config helpers read as Keras's
  const std::string what = "layer class 'Flatten'";
  LayerBase base = layer_base_from_config(config, what);
  // Keras's channels_first Flatten moves the channels last before flattening; Kestrel's keeps the order.
  check_channels_last(config, what);
  check_null(config, {"activity_regularizer"}, what);
  return Flatten({.name = std::move(base.name), .dtype = base.dtype});
}

}  // namespace kestrel::layers
