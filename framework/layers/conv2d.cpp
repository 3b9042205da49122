#include "framework/layers/conv2d.h"

#include <utility>

#include "framework/core/error.h"
#include "framework/ops/ops.h"

namespace kestrel::layers {
namespace {
ops::Padding padding_from_name(const std::string& name) {
  if (name == "valid") return ops::Padding::valid;
  if (name == "same") return ops::Padding::same;
  throw ValueError("unknown padding '" + name + "': expected \"valid\" or \"same\"");
}

std::string pair_string(const std::array<int, 2>& p) {
  std::string out = "{";
  out += std::to_string(p[0]);
  out += ", ";
  out += std::to_string(p[1]);
  out += "}";
  return out;
}
}  // namespace

PaddingArg::PaddingArg(const char* name) : padding_(padding_from_name(name)) {}
PaddingArg::PaddingArg(const std::string& name) : padding_(padding_from_name(name)) {}

Conv2D::Conv2D(int filters, std::array<int, 2> kernel_size, Conv2DOptions options)
    : Layer("Conv2D", options.name, options.dtype),
      filters_(filters),
      kernel_size_(kernel_size),
      options_(std::move(options)) {
  if (filters_ <= 0)
    throw ValueError(error_prefix() + "filters is " + std::to_string(filters_) + "; it must be positive");
  if (kernel_size_[0] <= 0 || kernel_size_[1] <= 0) {
    throw ValueError(error_prefix() + "kernel_size is " + pair_string(kernel_size_) + "; both sizes must be positive");
  }
  if (options_.strides[0] <= 0 || options_.strides[1] <= 0) {
    throw ValueError(error_prefix() + "strides are " + pair_string(options_.strides) + "; both must be positive");
  }
}

void Conv2D::build(const Shape& input_shape) {
  if (input_shape.rank() != 4) {
    throw ShapeError(error_prefix() + "input is " + input_shape.to_string() +
                     "; Conv2D takes images [batch, height, width, channels]" +
                     (input_shape.rank() == 3 ? ": add the channel axis with ops::expand_dims(x, -1)" : ""));
  }
  kernel_ =
      add_weight("kernel", {kernel_size_[0], kernel_size_[1], input_shape[-1], filters_}, options_.kernel_initializer);
  if (options_.use_bias) bias_ = add_weight("bias", {filters_}, options_.bias_initializer);
}

Tensor Conv2D::call(const Tensor& x, bool training) {
  std::int64_t channels = kernel_.shape()[2];
  if (x.rank() != 4 || x.shape()[-1] != channels) {
    throw ShapeError(error_prefix() + "input is " + x.shape().to_string() + " but the layer was built for " +
                     std::to_string(channels) + " input channels (kernel " + kernel_.shape().to_string() +
                     "); feed [batch, height, width, " + std::to_string(channels) + "] images, or use a new layer");
  }
  Tensor y;
  try {
    y = ops::conv2d(x, kernel_.value(), {.strides = options_.strides, .padding = options_.padding.value()});
  } catch (const ShapeError& e) {
    throw ShapeError(error_prefix() + e.what());
  }
  if (bias_.defined()) y = ops::add(y, bias_.value());
  return options_.activation(y);
}

}  // namespace kestrel::layers
