// Test support for weight ties: a model whose decoder kernel is its encoder's.
//
//   testing::TiedPair model;               // tie_weights() ties decoder/kernel to encoder/kernel
//   model(x);                              // the first call builds, then ties
//   model.decoder().recreate_kernel();     // a fresh variable in decoder/kernel's slot: untied
#pragma once

#include <optional>
#include <string>

#include "framework/core/random.h"
#include "framework/layers/layer.h"
#include "framework/model/model.h"
#include "framework/ops/ops.h"

namespace kestrel::testing {

/// y = x · kernel + bias, kernel [width, width].
class Projection : public Layer {
 public:
  explicit Projection(std::string name) : Layer("Projection", std::move(name)) {}
  void build(const Shape& input_shape) override {
    kernel_ = add_weight("kernel", {input_shape[-1], input_shape[-1]}, "glorot_uniform");
    bias_ = add_weight("bias", {input_shape[-1]}, "random_normal");
  }
  Tensor call(const Tensor& x, bool /*training*/) override {
    return ops::add(ops::matmul(x, kernel_.value()), bias_.value());
  }
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }
  /// Puts a new variable (of `shape`, else the kernel's) in the kernel's slot, as a layer that
  /// re-creates a weight does: whatever tie the old kernel had is gone.
  void recreate_kernel(std::optional<Shape> shape = std::nullopt) {
    Variable fresh(kernel_.name(), random::normal(shape.value_or(kernel_.shape()), random::Key(99)));
    replace_weight(kernel_, fresh);
    kernel_ = fresh;
  }

 private:
  Variable kernel_;
  Variable bias_;
};

/// decoder(tanh(encoder(x))); with `tie`, tie_weights() makes decoder/kernel encoder/kernel.
class TiedPair : public Model {
 public:
  explicit TiedPair(bool tie = true)
      : encoder_(add<Projection>("encoder")), decoder_(add<Projection>("decoder")), tie_(tie) {}
  Tensor call(const Inputs& x, bool training) override { return decoder_(ops::tanh(encoder_(x, training)), training); }
  void tie_weights() override {
    if (tie_ && encoder_.built() && decoder_.built()) decoder_.kernel().tie_to(encoder_.kernel());
  }
  Projection& encoder() { return encoder_; }
  Projection& decoder() { return decoder_; }
  bool tied() const { return decoder_.kernel().is_same(encoder_.kernel()); }

 private:
  Projection& encoder_;
  Projection& decoder_;
  bool tie_;
};

}  // namespace kestrel::testing
