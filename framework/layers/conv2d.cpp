#include "framework/layers/conv2d.h"

#include <array>
#include <string>
#include <utility>

#include "framework/core/error.h"
#include "framework/layers/serialization.h"
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

nlohmann::json Conv2D::get_config() const {
  using namespace serialization;  // NOLINT(google-build-using-namespace): the config helpers read as Keras's
  nlohmann::json config = Layer::get_config();
  config["filters"] = filters_;
  config["kernel_size"] = kernel_size_;
  config["strides"] = options_.strides;
  config["padding"] = options_.padding.name();
  config["data_format"] = "channels_last";
  config["dilation_rate"] = std::array<int, 2>{1, 1};
  config["groups"] = 1;
  put_kernel_options(config, options_, error_prefix());
  put_null(config, {"activity_regularizer"});
  return config;
}

Conv2D Conv2D::from_config(const nlohmann::json& config) {
  using namespace serialization;  // NOLINT(google-build-using-namespace): the config helpers read as Keras's
  const std::string what = "layer class 'Conv2D'";
  LayerBase base = layer_base_from_config(config, what);
  check_channels_last(config, what);
  check_unsupported(config, "groups", 1, what,
                    "Kestrel's Conv2D convolves every input channel with every filter: set 'groups' to 1");
  if (int_tuple<2>(config, "dilation_rate", {1, 1}, what) != std::array<int, 2>{1, 1}) {
    check_unsupported(config, "dilation_rate", std::array<int, 2>{1, 1}, what,
                      "Kestrel's Conv2D has no dilation: set 'dilation_rate' to [1, 1]");
  }
  check_null(config,
             {"kernel_regularizer", "bias_regularizer", "activity_regularizer", "kernel_constraint", "bias_constraint",
              "lora_rank", "lora_alpha"},
             what);
  required<nlohmann::json>(config, "kernel_size", what);  // no default, as in Keras
  Conv2DOptions options{.strides = int_tuple<2>(config, "strides", {1, 1}, what),
                        .padding = padding_from_config(config, what),
                        .name = std::move(base.name),
                        .dtype = base.dtype};
  read_kernel_options(config, options, what);
  return Conv2D(required<int>(config, "filters", what), int_tuple<2>(config, "kernel_size", {0, 0}, what),
                std::move(options));
}

}  // namespace kestrel::layers
