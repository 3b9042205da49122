// TransposeFolding ("transpose_folding"): the transposes that move attention's heads forward and
// back, [B, T, H, D] <-> [B, H, T, D], fold into the matmuls on either side of them, which read
// and write those layouts in place by strides (detail::MatmulHeadsLayout, kernels::gemm's two
// batch levels). The copies go, in the forward pass and in the backward one.
//
//   jit::TransposeFolding folding;
//   folding.run(graph);   // after differentiation and the simplifications, before the fusions
//   // before: %4 = transpose(%q) {perm=[0,2,1,3]} : [2,4,128,64]
//   //         %5 = transpose(%k) {perm=[0,2,1,3]} : [2,4,128,64]
//   //         %6 = matmul(%4, %5) {transpose_b=true} : [2,4,128,128]
//   // after:  %7 = matmul(%q, %k) {transpose_b=true, heads_a, heads_b} : [2,4,128,128]
//   // and a product read only by such a transpose is written in the transposed layout:
//   // before: %8 = transpose(%v) {perm=[0,2,1,3]} : [2,4,128,64]   %9 = matmul(%p, %8) : [2,4,128,64]
//   //         %10 = transpose(%9) {perm=[0,2,1,3]} : [2,128,4,64]
//   // after:  %11 = matmul(%p, %v) {heads_b, heads_out} : [2,128,4,64]
//
// A transpose swaps the heads when it exchanges axes -3 and -2 and keeps the others. One that
// other ops read too stays for them; the matmuls read past it all the same.
#pragma once

#include <string>

#include "framework/jit/pass.h"

namespace kestrel::jit {

class TransposeFolding final : public Pass {
 public:
  std::string name() const override { return "transpose_folding"; }
  /// Applies the rewrite above; true when it applied anywhere.
  bool run(Graph& graph) override;
};

}  // namespace kestrel::jit
