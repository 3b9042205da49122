#include "framework/layers/pooling.h"

#include <string>
#include <utility>

#include "framework/core/error.h"
#include "framework/layers/serialization.h"
#include "framework/ops/ops.h"

namespace kestrel::layers {
namespace {
std::string pair_string(const std::array<int, 2>& p) {
  std::string out = "{";
  out += std::to_string(p[0]);
  out += ", ";
  out += std::to_string(p[1]);
  out += "}";
  return out;
}

void check_options(const Layer& layer, const Pooling2DOptions& o) {
  if (o.pool_size[0] <= 0 || o.pool_size[1] <= 0) {
    throw ValueError(layer.error_prefix() + "pool_size is " + pair_string(o.pool_size) +
                     "; both sizes must be positive");
  }
  // {0, 0} stands for "same as pool_size"; anything else must be a real stride.
  bool default_strides = o.strides[0] == 0 && o.strides[1] == 0;
  if (!default_strides && (o.strides[0] <= 0 || o.strides[1] <= 0)) {
    throw ValueError(layer.error_prefix() + "strides are " + pair_string(o.strides) +
                     "; both must be positive, or {0, 0} for pool_size");
  }
}

void check_images(const Layer& layer, const Tensor& x) {
  if (x.rank() != 4) {
    throw ShapeError(layer.error_prefix() + "input is " + x.shape().to_string() + "; " + layer.class_name() +
                     " takes images [batch, height, width, channels]" +
                     (x.rank() == 3 ? ": add the channel axis with ops::expand_dims(x, -1)" : ""));
  }
}

ops::Pool2DOptions to_ops(const Pooling2DOptions& o) {
  return {.pool_size = o.pool_size, .strides = o.strides, .padding = o.padding.value()};
}

// Keras's pooling config: strides are written out, pool_size when they default to it.
nlohmann::json pooling_config(nlohmann::json config, const Pooling2DOptions& o) {
  const bool default_strides = o.strides[0] == 0 && o.strides[1] == 0;
  config["pool_size"] = o.pool_size;
  config["padding"] = o.padding.name();
  config["strides"] = default_strides ? o.pool_size : o.strides;
  config["data_format"] = "channels_last";
  return config;
}

Pooling2DOptions pooling_options_from_config(const nlohmann::json& config, const std::string& class_name) {
  using namespace serialization;  // NOLINT(google-build-using-namespace): the config helpers read as Keras's
  const std::string what = "layer class '" + class_name + "'";
  LayerBase base = layer_base_from_config(config, what);
  check_channels_last(config, what);
  check_null(config, {"activity_regularizer"}, what);
  return {.pool_size = int_tuple<2>(config, "pool_size", {2, 2}, what),
          .strides = int_tuple<2>(config, "strides", {0, 0}, what),  // null: pool_size, as Keras's None
          .padding = padding_from_config(config, what),
          .name = std::move(base.name),
          .dtype = base.dtype};
}

// Window errors (a window larger than the image) come from the op; the layer's name is added.
template <class F>
Tensor with_layer_name(const Layer& layer, F&& run) {
  try {
    return run();
  } catch (const ShapeError& e) {
    throw ShapeError(layer.error_prefix() + e.what());
  }
}
}  // namespace

MaxPooling2D::MaxPooling2D(Pooling2DOptions options)
    : Layer("MaxPooling2D", options.name, options.dtype), options_(std::move(options)) {
  check_options(*this, options_);
}

Tensor MaxPooling2D::call(const Tensor& x, bool training) {
  check_images(*this, x);
  return with_layer_name(*this, [&] { return ops::max_pool2d(x, to_ops(options_)); });
}

AveragePooling2D::AveragePooling2D(Pooling2DOptions options)
    : Layer("AveragePooling2D", options.name, options.dtype), options_(std::move(options)) {
  check_options(*this, options_);
}

Tensor AveragePooling2D::call(const Tensor& x, bool training) {
  check_images(*this, x);
  return with_layer_name(*this, [&] { return ops::avg_pool2d(x, to_ops(options_)); });
}

nlohmann::json MaxPooling2D::get_config() const { return pooling_config(Layer::get_config(), options_); }

MaxPooling2D MaxPooling2D::from_config(const nlohmann::json& config) {
  return MaxPooling2D(pooling_options_from_config(config, "MaxPooling2D"));
}

nlohmann::json AveragePooling2D::get_config() const { return pooling_config(Layer::get_config(), options_); }

AveragePooling2D AveragePooling2D::from_config(const nlohmann::json& config) {
  return AveragePooling2D(pooling_options_from_config(config, "AveragePooling2D"));
}

}  // namespace kestrel::layers
