#include "framework/layers/zero_padding2d.h"

#include <array>
#include <cstddef>
#include <string>
#include <utility>

#include "framework/core/error.h"
#include "framework/layers/serialization.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::layers {
namespace {

// Keras's three forms of padding: an int, [height, width], or [[top, bottom], [left, right]],
// where each axis's entry is an int or a pair.
Padding2DArg padding2d_from_config(const nlohmann::json& config, const std::string& what) {
  if (!config.contains("padding") || config.at("padding").is_null()) return 1;
  const nlohmann::json& padding = config.at("padding");
  if (padding.is_number_integer()) return padding.get<int>();
  std::array<std::array<int, 2>, 2> sides{};
  bool fits = padding.is_array() && padding.size() == 2;
  for (std::size_t axis = 0; fits && axis < 2; ++axis) {
    const nlohmann::json& entry = padding[axis];
    if (entry.is_number_integer()) {
      sides[axis] = {entry.get<int>(), entry.get<int>()};
    } else {
      fits = entry.is_array() && entry.size() == 2 && entry[0].is_number_integer() && entry[1].is_number_integer();
      if (fits) sides[axis] = {entry[0].get<int>(), entry[1].get<int>()};
    }
  }
  if (!fits) {
    throw ValueError(what + ": 'padding' in the config is " + padding.dump() +
                     "; it must be an int, [height, width] or [[top, bottom], [left, right]]");
  }
  return {sides[0], sides[1]};
}

}  // namespace

std::string Padding2DArg::to_string() const {
  return "{{" + std::to_string(top()) + ", " + std::to_string(bottom()) + "}, {" + std::to_string(left()) + ", " +
         std::to_string(right()) + "}}";
}

ZeroPadding2D::ZeroPadding2D(ZeroPadding2DOptions options)
    : Layer("ZeroPadding2D", options.name, options.dtype), options_(std::move(options)) {
  const Padding2DArg& p = options_.padding;
  if (p.top() < 0 || p.bottom() < 0 || p.left() < 0 || p.right() < 0) {
    throw ValueError(error_prefix() + "padding is " + p.to_string() +
                     " ({{top, bottom}, {left, right}}); each side must be 0 or more");
  }
}

Tensor ZeroPadding2D::call(const Tensor& x, bool training) {
  if (x.rank() != 4) {
    throw ShapeError(error_prefix() + "input is " + x.shape().to_string() +
                     "; ZeroPadding2D takes images [batch, height, width, channels]" +
                     (x.rank() == 3 ? ": add the channel axis with ops::expand_dims(x, -1)" : ""));
  }
  const Padding2DArg& p = options_.padding;
  return ops::pad(x, {{0, 0}, {p.top(), p.bottom()}, {p.left(), p.right()}, {0, 0}});
}

nlohmann::json ZeroPadding2D::get_config() const {
  const Padding2DArg& p = options_.padding;
  nlohmann::json config = Layer::get_config();
  config["padding"] = {{p.top(), p.bottom()}, {p.left(), p.right()}};
  config["data_format"] = "channels_last";
  return config;
}

ZeroPadding2D ZeroPadding2D::from_config(const nlohmann::json& config) {
  using namespace serialization;  // NOLINT(google-build-using-namespace): the config helpers read as Keras's
  const std::string what = "layer class 'ZeroPadding2D'";
  LayerBase base = layer_base_from_config(config, what);
  check_channels_last(config, what);
  check_null(config, {"activity_regularizer"}, what);
  return ZeroPadding2D(
      {.padding = padding2d_from_config(config, what), .name = std::move(base.name), .dtype = base.dtype});
}

}  // namespace kestrel::layers
