// MatmulActivationFusion ("matmul_activation_fusion"): a relu or GELU (either form) applied to a
// (biased) matrix product, and to nothing else, moves into the product: the GEMM applies it as it
// stores C (relu as oneDNN's eltwise post-op; GELU through ops::gelu's own kernel on each tile
// the GEMM finishes, so its bits are the unfused op's; kernels/gemm.h).
//
//   jit::MatmulActivationFusion fusion;
//   fusion.run(graph);   // after matmul_bias_fusion, before elementwise fusion
//   // before: %5 = matmul(%x, %w, %b) : [4096,512]   %6 = reshape(%5) : [32,128,512]   %7 = relu(%6)
//   // after:  %8 = matmul(%x, %w, %b) {activation=relu} : [4096,512]   %9 = reshape(%8) : [32,128,512]
//
// Only where the product before the activation has no other reader, as in inference programs, and
// for relu in training steps too (relu's gradient reads its output, not its input; GELU's reads its
// input, which must then stay): the layer writes its output once instead of twice, and no buffer
// holds the pre-activation. float32 products only: a bfloat16 one keeps its activation apart, with
// the numbers the policy's ops give.
#pragma once

#include <string>

#include "framework/jit/pass.h"

namespace kestrel::jit {

class MatmulActivationFusion final : public Pass {
 public:
  std::string name() const override { return "matmul_activation_fusion"; }
  /// Applies the rewrite above; true when it applied anywhere.
  bool run(Graph& graph) override;
};

}  // namespace kestrel::jit
