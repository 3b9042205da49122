// Conv1D, as keras.layers.Conv1D: a 1-D convolution over sequences [batch, steps, channels]
// (channels last).
//
//   layers::Conv1D conv(32, 3, {.activation = "relu"});
//   Tensor y = conv(x);                    // [N,100,8] -> [N,98,32] ("valid" padding)
//   layers::Conv1D same(16, 5, {.strides = 2, .padding = "same"});            // [N,100,C] -> [N,50,16]
//   layers::Conv1D wave(16, 2, {.padding = "causal", .dilation_rate = 4});    // [N,100,C] -> [N,100,16]
//
// "causal" pads dilation_rate * (kernel_size - 1) zeros before the first step, so step t of the
// output sees only steps <= t of the input (WaveNet). As in Keras, strides > 1 does not combine
// with dilation_rate > 1.
//
// Weights: "kernel" [kernel_size, in_channels, filters] (glorot_uniform) and "bias" [filters] (zeros).
#pragma once

#include <optional>
#include <string>

#include "framework/layers/activations.h"
#include "framework/layers/initializers.h"
#include "framework/layers/layer.h"

namespace kestrel::layers {

struct Conv1DOptions {
  int strides = 1;
  std::string padding = "valid";  ///< "valid", "same" or "causal"
  int dilation_rate = 1;          ///< the kernel's taps are this many steps apart
  ActivationFn activation;        ///< linear by default
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  std::string name;
  /// The precision policy (unset: the parent's, else the global one; layers/dtype_policy.h).
  std::optional<DTypePolicy> dtype;
};

class Conv1D : public Layer {
 public:
  /// `filters` output channels, each from a window of kernel_size steps.
  Conv1D(int filters, int kernel_size, Conv1DOptions options = {});

  void build(const Shape& input_shape) override;
  /// activation(conv1d(x, kernel) + bias) for x [N, steps, C].
  Tensor call(const Tensor& x, bool training) override;

  nlohmann::json get_config() const override;
  static Conv1D from_config(const nlohmann::json& config);

  int filters() const { return filters_; }
  int kernel_size() const { return kernel_size_; }
  const Conv1DOptions& options() const { return options_; }
  /// The kernel [kernel_size, in, filters]; undefined until built.
  const Variable& kernel() const { return kernel_; }
  /// The bias [filters]; undefined until built, or when use_bias is false.
  const Variable& bias() const { return bias_; }

 private:
  int filters_;
  int kernel_size_;
  Conv1DOptions options_;
  Variable kernel_;
  Variable bias_;
};

}  // namespace kestrel::layers
