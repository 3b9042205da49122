// GradientTape: records ops for reverse-mode differentiation, as tf.GradientTape does.
//
//   Tensor w = ...;
//   GradientTape tape;
//   tape.watch(w);                       // Variables are watched automatically
//   Tensor loss = ops::sum(ops::square(ops::matmul(x, w)));
//   auto [dw] = tape.gradient(loss, {w});
//
// Tapes nest: an outer tape records what an inner tape's gradient() computes, which gives
// second derivatives. Recording is per thread.
#pragma once

#include <vector>

#include "framework/core/tensor.h"

namespace kestrel {

class GradientTape {
 public:
  /// A persistent tape allows several gradient() calls; a default tape allows one, as in TF.
  explicit GradientTape(bool persistent = false);
  ~GradientTape();
  GradientTape(const GradientTape&) = delete;
  GradientTape& operator=(const GradientTape&) = delete;

  /// Makes gradients flow to `tensor` (a floating tensor).
  void watch(const Tensor& tensor);

  /// d(target)/d(source) for each source; zeros for a source the target does not depend on.
  /// output_gradient (default: ones) seeds the reverse pass for a non-scalar target.
  std::vector<Tensor> gradient(const Tensor& target, const std::vector<Tensor>& sources,
                               const Tensor& output_gradient = Tensor());

 private:
  bool persistent_;
  bool recording_ = true;
  bool used_ = false;
};

}  // namespace kestrel
