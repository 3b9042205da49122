#include "framework/layers/global_pooling.h"

#include <string>
#include <utility>

#include "framework/core/error.h"
#include "framework/layers/serialization.h"
#include "framework/ops/reduce.h"

namespace kestrel::layers {
namespace {

// Sequences [batch, steps, channels]; `images_layer` is the 2-D layer to suggest for images.
void check_sequences(const Layer& layer, const Tensor& x, const char* images_layer) {
  if (x.rank() == 3) return;
  std::string fix;
  if (x.rank() == 2) fix = ": add the channel axis with ops::expand_dims(x, -1)";
  if (x.rank() == 4) fix = std::string(": for images [batch, height, width, channels] use ") + images_layer;
  throw ShapeError(layer.error_prefix() + "input is " + x.shape().to_string() + "; " + layer.class_name() +
                   " takes sequences [batch, steps, channels]" + fix);
}

// Images [batch, height, width, channels]; `sequences_layer` is the 1-D layer to suggest for sequences.
void check_images(const Layer& layer, const Tensor& x, const char* sequences_layer) {
  if (x.rank() == 4) return;
  std::string fix;
  if (x.rank() == 3) {
    fix = std::string(
              ": add the channel axis with ops::expand_dims(x, -1), or for sequences [batch, steps, "
              "channels] use ") +
          sequences_layer;
  }
  throw ShapeError(layer.error_prefix() + "input is " + x.shape().to_string() + "; " + layer.class_name() +
                   " takes images [batch, height, width, channels]" + fix);
}

nlohmann::json global_pooling_config(nlohmann::json config, const GlobalPoolingOptions& o) {
  config["data_format"] = "channels_last";
  config["keepdims"] = o.keepdims;
  return config;
}

GlobalPoolingOptions global_pooling_options_from_config(const nlohmann::json& config, const std::string& class_name) {
  using namespace serialization;  // NOLINT(google-build-using-namespace): the config helpers read as Keras's
  const std::string what = "layer class '" + class_name + "'";
  LayerBase base = layer_base_from_config(config, what);
  check_channels_last(config, what);
  check_null(config, {"activity_regularizer"}, what);
  return {
      .keepdims = optional<bool>(config, "keepdims", false, what), .name = std::move(base.name), .dtype = base.dtype};
}

}  // namespace

GlobalAveragePooling1D::GlobalAveragePooling1D(GlobalPoolingOptions options)
    : Layer("GlobalAveragePooling1D", options.name, options.dtype), options_(std::move(options)) {}

Tensor GlobalAveragePooling1D::call(const Tensor& x, bool training) {
  check_sequences(*this, x, "GlobalAveragePooling2D");
  return ops::mean(x, {.axes = {1}, .keepdims = options_.keepdims});
}

GlobalMaxPooling1D::GlobalMaxPooling1D(GlobalPoolingOptions options)
    : Layer("GlobalMaxPooling1D", options.name, options.dtype), options_(std::move(options)) {}

Tensor GlobalMaxPooling1D::call(const Tensor& x, bool training) {
  check_sequences(*this, x, "GlobalMaxPooling2D");
  return ops::max(x, {.axes = {1}, .keepdims = options_.keepdims});
}

GlobalAveragePooling2D::GlobalAveragePooling2D(GlobalPoolingOptions options)
    : Layer("GlobalAveragePooling2D", options.name, options.dtype), options_(std::move(options)) {}

Tensor GlobalAveragePooling2D::call(const Tensor& x, bool training) {
  check_images(*this, x, "GlobalAveragePooling1D");
  return ops::mean(x, {.axes = {1, 2}, .keepdims = options_.keepdims});
}

GlobalMaxPooling2D::GlobalMaxPooling2D(GlobalPoolingOptions options)
    : Layer("GlobalMaxPooling2D", options.name, options.dtype), options_(std::move(options)) {}

Tensor GlobalMaxPooling2D::call(const Tensor& x, bool training) {
  check_images(*this, x, "GlobalMaxPooling1D");
  return ops::max(x, {.axes = {1, 2}, .keepdims = options_.keepdims});
}

nlohmann::json GlobalAveragePooling1D::get_config() const {
  return global_pooling_config(Layer::get_config(), options_);
}

GlobalAveragePooling1D GlobalAveragePooling1D::from_config(const nlohmann::json& config) {
  return GlobalAveragePooling1D(global_pooling_options_from_config(config, "GlobalAveragePooling1D"));
}

nlohmann::json GlobalMaxPooling1D::get_config() const { return global_pooling_config(Layer::get_config(), options_); }

GlobalMaxPooling1D GlobalMaxPooling1D::from_config(const nlohmann::json& config) {
  return GlobalMaxPooling1D(global_pooling_options_from_config(config, "GlobalMaxPooling1D"));
}

nlohmann::json GlobalAveragePooling2D::get_config() const {
  return global_pooling_config(Layer::get_config(), options_);
}

GlobalAveragePooling2D GlobalAveragePooling2D::from_config(const nlohmann::json& config) {
  return GlobalAveragePooling2D(global_pooling_options_from_config(config, "GlobalAveragePooling2D"));
}

nlohmann::json GlobalMaxPooling2D::get_config() const { return global_pooling_config(Layer::get_config(), options_); }

GlobalMaxPooling2D GlobalMaxPooling2D::from_config(const nlohmann::json& config) {
  return GlobalMaxPooling2D(global_pooling_options_from_config(config, "GlobalMaxPooling2D"));
}

}  // namespace kestrel::layers
