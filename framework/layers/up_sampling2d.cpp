#include "framework/layers/up_sampling2d.h"

#include <cctype>
#include <string>
#include <utility>

#include "framework/core/error.h"
#include "framework/layers/serialization.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::layers {

UpSampling2D::UpSampling2D(UpSampling2DOptions options)
    : Layer("UpSampling2D", options.name, options.dtype), options_(std::move(options)) {
  const std::array<int, 2>& s = options_.size;
  if (s[0] <= 0 || s[1] <= 0) {
    throw ValueError(error_prefix() + "size is {" + std::to_string(s[0]) + ", " + std::to_string(s[1]) +
                     "}; both factors must be positive");
  }
  if (options_.interpolation != "nearest") {
    const bool keras_has_it = options_.interpolation == "bilinear" || options_.interpolation == "bicubic" ||
                              options_.interpolation == "lanczos3" || options_.interpolation == "lanczos5";
    throw ValueError(error_prefix() + "interpolation \"" + options_.interpolation + "\" is " +
                     (keras_has_it ? "not supported" : "unknown") + "; the supported interpolations are: \"nearest\"");
  }
}

Tensor UpSampling2D::call(const Tensor& x, bool training) {
  if (x.rank() != 4) {
    throw ShapeError(error_prefix() + "input is " + x.shape().to_string() +
                     "; UpSampling2D takes images [batch, height, width, channels]" +
                     (x.rank() == 3 ? ": add the channel axis with ops::expand_dims(x, -1)" : ""));
  }
  const Shape& in = x.shape();
  const std::int64_t rows = options_.size[0];
  const std::int64_t cols = options_.size[1];
  // Nearest neighbour by whole factors is a broadcast: each pixel becomes a rows x cols block.
  // Its gradient (sum_to) adds each block's cotangents back into the pixel.
  Tensor blocks = ops::broadcast_to(ops::reshape(x, {in[0], in[1], 1, in[2], 1, in[3]}),
                                    Shape{in[0], in[1], rows, in[2], cols, in[3]});
  return ops::reshape(blocks, {in[0], in[1] * rows, in[2] * cols, in[3]});
}

nlohmann::json UpSampling2D::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["size"] = options_.size;
  config["data_format"] = "channels_last";
  config["interpolation"] = options_.interpolation;
  return config;
}

UpSampling2D UpSampling2D::from_config(const nlohmann::json& config) {
  using namespace serialization;  // NOLINT(google-build-using-namespace): the config helpers read as Keras's
  const std::string what = "layer class 'UpSampling2D'";
  LayerBase base = layer_base_from_config(config, what);
  check_channels_last(config, what);
  check_null(config, {"activity_regularizer"}, what);
  // Keras takes the interpolation in any case; the constructor rejects those Kestrel lacks.
  std::string interpolation = optional<std::string>(config, "interpolation", "nearest", what);
  for (char& c : interpolation) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return UpSampling2D({.size = int_tuple<2>(config, "size", {2, 2}, what),
                       .interpolation = std::move(interpolation),
                       .name = std::move(base.name),
                       .dtype = base.dtype});
}

}  // namespace kestrel::layers
