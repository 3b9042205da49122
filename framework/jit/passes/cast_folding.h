// CastFolding ("cast_folding"): a widening cast from bfloat16 to float32 folds into the ops that
// read bfloat16 exactly as its float32 values (Primitive::widens_bfloat16_exactly), and so does a
// rounding cast back to bfloat16 of such an op's result. The float32 copy is never made, and
// the bits do not change: the op widens its operand itself, computes in float32 as before, and
// rounds its result once, as the cast after it did.
//
//   jit::CastFolding folding;
//   folding.run(graph);   // after differentiation and the simplifications
//   // before: %1 = cast(%logits) {dtype=float32} : float32[2048,8192]
//   //         %2 = softmax_cross_entropy(%1, %labels) : float32[2048]
//   //         %3 = softmax_cross_entropy_backprop(%1, %labels, %dloss) : float32[2048,8192]
//   //         %4 = cast(%3) {dtype=bfloat16} : bfloat16[2048,8192]
//   // after:  %5 = softmax_cross_entropy(%logits, %labels) : float32[2048]
//   //         %6 = softmax_cross_entropy_backprop(%logits, %labels, %dloss) : bfloat16[2048,8192]
//
// The mixed_bfloat16 policy gives a model float32 outputs for its loss, so a language model's
// logits would otherwise exist twice over, in float32, forward and backward.
#pragma once

#include <string>

#include "framework/jit/pass.h"

namespace kestrel::jit {

class CastFolding final : public Pass {
 public:
  std::string name() const override { return "cast_folding"; }
  /// Applies the rewrite above; true when it applied anywhere.
  bool run(Graph& graph) override;
};

}  // namespace kestrel::jit
