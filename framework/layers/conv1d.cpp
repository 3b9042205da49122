#include "framework/layers/conv1d.h"

#include <array>
#include <cstdint>
#include <string>
#include <utility>

#include "framework/core/error.h"
#include "framework/layers/serialization.h"
#include "framework/ops/conv.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::layers {
namespace {

// The 1-D convolution as a 2-D one of height 1: x [N,L,C] is viewed as [N,1,L,C] and the filter
// [1,k,C,F] as a 1 x k window.
Tensor conv_steps(const Tensor& x, const Tensor& filter, int strides, ops::Padding padding) {
  const Shape& in = x.shape();
  Tensor y =
      ops::conv2d(ops::reshape(x, {in[0], 1, in[1], in[2]}), filter, {.strides = {1, strides}, .padding = padding});
  return ops::reshape(y, {in[0], y.shape()[2], y.shape()[3]});
}

// A "valid" convolution whose taps are `dilation` steps apart, at stride 1, as TF computes it
// (space_to_batch): the steps t = q * dilation + p of phase p form their own sequence, on which
// the dilated kernel is an ordinary one. The phases run as one batch, then interleave back.
Tensor dilated_conv_steps(const Tensor& x, const Tensor& filter, int dilation) {
  const std::int64_t n = x.shape()[0];
  const std::int64_t steps = x.shape()[1];
  const std::int64_t channels = x.shape()[2];
  const std::int64_t kernel_size = filter.shape()[1];
  const std::int64_t d = dilation;
  const std::int64_t out_steps = steps - d * (kernel_size - 1);
  const std::int64_t phase_steps = (steps + d - 1) / d;
  // Zeros appended to make whole phases only reach outputs past out_steps, which are cut off.
  Tensor padded = ops::pad(x, {{0, 0}, {0, phase_steps * d - steps}, {0, 0}});
  Tensor phases = ops::transpose(ops::reshape(padded, {n, phase_steps, d, channels}), {0, 2, 1, 3});
  Tensor y = conv_steps(ops::reshape(phases, {n * d, phase_steps, channels}), filter, 1, ops::Padding::valid);
  const std::int64_t filters = y.shape()[2];
  const std::int64_t phase_out = y.shape()[1];
  Tensor interleaved = ops::transpose(ops::reshape(y, {n, d, phase_out, filters}), {0, 2, 1, 3});
  return ops::slice(ops::reshape(interleaved, {n, phase_out * d, filters}), {0, 0, 0}, {-1, out_steps, -1});
}

}  // namespace

Conv1D::Conv1D(int filters, int kernel_size, Conv1DOptions options)
    : Layer("Conv1D", options.name, options.dtype),
      filters_(filters),
      kernel_size_(kernel_size),
      options_(std::move(options)) {
  if (filters_ <= 0)
    throw ValueError(error_prefix() + "filters is " + std::to_string(filters_) + "; it must be positive");
  if (kernel_size_ <= 0) {
    throw ValueError(error_prefix() + "kernel_size is " + std::to_string(kernel_size_) + "; it must be positive");
  }
  if (options_.strides <= 0)
    throw ValueError(error_prefix() + "strides is " + std::to_string(options_.strides) + "; it must be positive");
  if (options_.dilation_rate <= 0) {
    throw ValueError(error_prefix() + "dilation_rate is " + std::to_string(options_.dilation_rate) +
                     "; it must be positive");
  }
  if (options_.padding != "valid" && options_.padding != "same" && options_.padding != "causal") {
    throw ValueError(error_prefix() + "unknown padding '" + options_.padding +
                     "': expected \"valid\", \"same\" or \"causal\"");
  }
  if (options_.strides > 1 && options_.dilation_rate > 1) {
    throw ValueError(error_prefix() + "strides is " + std::to_string(options_.strides) + " and dilation_rate is " +
                     std::to_string(options_.dilation_rate) +
                     "; strides > 1 does not combine with dilation_rate > 1 (as in Keras): set one of them to 1");
  }
}

void Conv1D::build(const Shape& input_shape) {
  if (input_shape.rank() != 3) {
    std::string fix;
    if (input_shape.rank() == 2) fix = ": add the channel axis with ops::expand_dims(x, -1)";
    if (input_shape.rank() == 4) fix = ": for images [batch, height, width, channels] use Conv2D";
    throw ShapeError(error_prefix() + "input is " + input_shape.to_string() +
                     "; Conv1D takes sequences [batch, steps, channels]" + fix);
  }
  kernel_ = add_weight("kernel", {kernel_size_, input_shape[-1], filters_}, options_.kernel_initializer);
  if (options_.use_bias) bias_ = add_weight("bias", {filters_}, options_.bias_initializer);
}

Tensor Conv1D::call(const Tensor& x, bool training) {
  const std::int64_t channels = kernel_.shape()[1];
  if (x.rank() != 3 || x.shape()[-1] != channels) {
    throw ShapeError(error_prefix() + "input is " + x.shape().to_string() + " but the layer was built for " +
                     std::to_string(channels) + " input channels (kernel " + kernel_.shape().to_string() +
                     "); feed [batch, steps, " + std::to_string(channels) + "] sequences, or use a new layer");
  }
  const int d = options_.dilation_rate;
  const std::int64_t reach = static_cast<std::int64_t>(d) * (kernel_size_ - 1);  // steps past the first tap
  Tensor input = x;
  ops::Padding padding = ops::Padding::valid;
  if (options_.padding == "causal") {
    input = ops::pad(x, {{0, 0}, {reach, 0}, {0, 0}});
  } else if (options_.padding == "same") {
    // ops::conv2d pads as TF does for any stride; a dilated kernel (stride 1) is padded here alike,
    // the odd step after.
    if (d == 1) {
      padding = ops::Padding::same;
    } else {
      input = ops::pad(x, {{0, 0}, {reach / 2, reach - reach / 2}, {0, 0}});
    }
  }
  if (padding == ops::Padding::valid && input.shape()[1] < reach + 1) {
    throw ShapeError(error_prefix() + "input is " + x.shape().to_string() + ": its " + std::to_string(x.shape()[1]) +
                     " steps are fewer than the " + std::to_string(reach + 1) + " the kernel spans (kernel_size " +
                     std::to_string(kernel_size_) + ", dilation_rate " + std::to_string(d) +
                     "); feed longer sequences" +
                     (options_.padding == "valid" ? ", or use padding \"same\" or \"causal\"" : ""));
  }
  const Tensor filter = ops::reshape(kernel_.value(), {1, kernel_size_, channels, filters_});
  Tensor y = d == 1 ? conv_steps(input, filter, options_.strides, padding) : dilated_conv_steps(input, filter, d);
  if (bias_.defined()) y = ops::add(y, bias_.value());
  return options_.activation(y);
}

nlohmann::json Conv1D::get_config() const {
  using namespace serialization;  // NOLINT(google-build-using-namespace): the config helpers read as Keras's
  nlohmann::json config = Layer::get_config();
  config["filters"] = filters_;
  // Keras keeps its tuple options as tuples of one: [3], not 3.
  config["kernel_size"] = nlohmann::json::array({kernel_size_});
  config["strides"] = nlohmann::json::array({options_.strides});
  config["padding"] = options_.padding;
  config["data_format"] = "channels_last";
  config["dilation_rate"] = nlohmann::json::array({options_.dilation_rate});
  config["groups"] = 1;
  put_kernel_options(config, options_, error_prefix());
  put_null(config, {"activity_regularizer"});
  return config;
}

Conv1D Conv1D::from_config(const nlohmann::json& config) {
  using namespace serialization;  // NOLINT(google-build-using-namespace): the config helpers read as Keras's
  const std::string what = "layer class 'Conv1D'";
  LayerBase base = layer_base_from_config(config, what);
  check_channels_last(config, what);
  check_unsupported(config, "groups", 1, what,
                    "Kestrel's Conv1D convolves every input channel with every filter: set 'groups' to 1");
  check_null(config,
             {"kernel_regularizer", "bias_regularizer", "activity_regularizer", "kernel_constraint", "bias_constraint",
              "lora_rank", "lora_alpha"},
             what);
  required<nlohmann::json>(config, "kernel_size", what);  // no default, as in Keras
  Conv1DOptions options{.strides = int_tuple<1>(config, "strides", {1}, what)[0],
                        .padding = padding_from_config(config, what, /*allow_causal=*/true),
                        .dilation_rate = int_tuple<1>(config, "dilation_rate", {1}, what)[0],
                        .name = std::move(base.name),
                        .dtype = base.dtype};
  read_kernel_options(config, options, what);
  return Conv1D(required<int>(config, "filters", what), int_tuple<1>(config, "kernel_size", {0}, what)[0],
                std::move(options));
}

}  // namespace kestrel::layers
