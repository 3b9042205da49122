// MatmulScaleFolding ("matmul_scale_folding"): a matrix product scaled by a constant power of two,
// on an operand or on the result, takes the factor as the GEMM's alpha, and the multiply's pass
// over the tensor goes (attention's queries times 1/sqrt(head_dim), and the same factor on their
// gradient).
//
//   jit::MatmulScaleFolding folding;
//   folding.run(graph);   // after transpose folding, before the bias and elementwise fusions
//   // an operand read only by products:
//   // before: %5 = multiply(%q, %c) : [2,128,4,64]   (%c = constant 0.125)
//   //         %6 = matmul(%5, %k) {transpose_b=true, heads_a, heads_b} : [2,4,128,128]
//   // after:  %7 = matmul(%q, %k) {transpose_b=true, heads_a, heads_b, scale=0.125} : [2,4,128,128]
//   // a product read only by the multiply:
//   // before: %8 = matmul(%d, %k) {heads_b, heads_out} : [2,128,4,64]   %9 = multiply(%8, %c)
//   // after:  %10 = matmul(%d, %k) {heads_b, heads_out, scale=0.125} : [2,128,4,64]
//
// Only powers of two: multiplying by one is exact in float32 and bfloat16 (away from subnormals
// and overflow), so alpha * (A B) has the bits of (alpha A) B and of a rounded A B times alpha,
// however the GEMM orders its sums; any other factor would round elsewhere than the eager ops do.
// Only products without a bias operand or an activation, since the GEMM applies alpha before the
// bias. The multiply must have its tensor's spec (the constant is a scalar of its dtype) and,
// folded into its readers, be read by nothing but the products' operands.
#pragma once

#include <string>

#include "framework/jit/pass.h"

namespace kestrel::jit {

class MatmulScaleFolding final : public Pass {
 public:
  std::string name() const override { return "matmul_scale_folding"; }
  /// Applies the rewrites above; true when one applied anywhere.
  bool run(Graph& graph) override;
};

}  // namespace kestrel::jit
