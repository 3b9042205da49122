// Dense: a fully connected layer, as keras.layers.Dense.
//
//   layers::Dense hidden(512, {.activation = "relu"});
//   Tensor h = hidden(x);                  // x [32,784] -> [32,512]; weights built from x
//   hidden.kernel().name();                // "dense/kernel", shape [784,512]
//   Tensor t = hidden(tokens);             // [B,T,784] -> [B,T,512]: acts on the last axis
//
// Weights: "kernel" [in, units] (glorot_uniform) and "bias" [units] (zeros), created from the last
// dim of the first input.
//
// The matrix multiply adds the bias as it stores the product. It applies a built-in relu or gelu
// there too when nothing records the call (an eager predict or evaluate: no gradient tape, no jit
// trace, a float32 product), so the output is written once; a compiled program leaves that choice
// to the jit's fusion. The numbers are the activation op's either way.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "framework/layers/activations.h"
#include "framework/layers/initializers.h"
#include "framework/layers/layer.h"

namespace kestrel::layers {

struct DenseOptions {
  ActivationFn activation;  ///< linear by default
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  std::string name;
  /// The precision policy (unset: the parent's, else the global one; layers/dtype_policy.h).
  std::optional<DTypePolicy> dtype;
};

class Dense : public Layer {
 public:
  /// A layer with `units` outputs; units must be positive.
  explicit Dense(std::int64_t units, DenseOptions options = {});

  void build(const Shape& input_shape) override;
  /// activation(x @ kernel + bias) over the last axis of x (rank >= 2).
  Tensor call(const Tensor& x, bool training) override;

  nlohmann::json get_config() const override;
  static Dense from_config(const nlohmann::json& config);

  std::int64_t units() const { return units_; }
  const DenseOptions& options() const { return options_; }
  /// The kernel [in, units]; undefined until the layer is built.
  const Variable& kernel() const { return kernel_; }
  /// The bias [units]; undefined until built, or when use_bias is false.
  const Variable& bias() const { return bias_; }

 private:
  std::int64_t units_;
  DenseOptions options_;
  Variable kernel_;
  Variable bias_;
};

}  // namespace kestrel::layers
