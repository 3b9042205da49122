// Conv2D, as keras.layers.Conv2D: a 2-D convolution over NHWC images (channels last).
//
//   layers::Conv2D conv(32, {3, 3}, {.activation = "relu"});
//   Tensor y = conv(images);               // [128,28,28,1] -> [128,26,26,32] ("valid" padding)
//   layers::Conv2D same(64, {3, 3}, {.strides = {2, 2}, .padding = "same"});   // [N,28,28,C] -> [N,14,14,64]
//
// Weights: "kernel" [kh, kw, in_channels, filters] (glorot_uniform) and "bias" [filters] (zeros).
#pragma once

#include <array>
#include <optional>
#include <string>

#include "framework/layers/activations.h"
#include "framework/layers/initializers.h"
#include "framework/layers/layer.h"
#include "framework/ops/conv.h"

namespace kestrel::layers {

/// Padding by Keras name ("valid" or "same") or as ops::Padding; other names throw ValueError.
class PaddingArg {
 public:
  // NOLINTNEXTLINE(google-explicit-constructor): padding = "same", as Keras takes it
  PaddingArg(ops::Padding padding) : padding_(padding) {}
  // NOLINTNEXTLINE(google-explicit-constructor): padding = "same", as Keras takes it
  PaddingArg(const char* name);
  // NOLINTNEXTLINE(google-explicit-constructor): padding = "same", as Keras takes it
  PaddingArg(const std::string& name);

  ops::Padding value() const { return padding_; }
  /// "valid" or "same".
  const char* name() const { return padding_ == ops::Padding::same ? "same" : "valid"; }

 private:
  ops::Padding padding_;
};

struct Conv2DOptions {
  std::array<int, 2> strides{1, 1};
  PaddingArg padding = "valid";
  ActivationFn activation;  ///< linear by default
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  std::string name;
  /// The precision policy (unset: the parent's, else the global one; layers/dtype_policy.h).
  std::optional<DTypePolicy> dtype;
};

class Conv2D : public Layer {
 public:
  /// `filters` output channels, each from a kernel_size = {kh, kw} window.
  Conv2D(int filters, std::array<int, 2> kernel_size, Conv2DOptions options = {});

  void build(const Shape& input_shape) override;
  /// activation(conv2d(x, kernel) + bias) for x [N, H, W, C].
  Tensor call(const Tensor& x, bool training) override;

  nlohmann::json get_config() const override;
  static Conv2D from_config(const nlohmann::json& config);

  int filters() const { return filters_; }
  const std::array<int, 2>& kernel_size() const { return kernel_size_; }
  const Conv2DOptions& options() const { return options_; }
  /// The kernel [kh, kw, in, filters]; undefined until built.
  const Variable& kernel() const { return kernel_; }
  /// The bias [filters]; undefined until built, or when use_bias is false.
  const Variable& bias() const { return bias_; }

 private:
  int filters_;
  std::array<int, 2> kernel_size_;
  Conv2DOptions options_;
  Variable kernel_;
  Variable bias_;
};

}  // namespace kestrel::layers
