// MatmulActivationFusion ("matmul_activation_fusion"): a relu applied to a (biased) matrix
// product, and to nothing else, moves into the product: the GEMM applies it as it stores C
// (oneDNN's eltwise post-op; kernels/gemm.h).
//
//   jit::MatmulActivationFusion fusion;
//   fusion.run(graph);   // after matmul_bias_fusion, before elementwise fusion
//   // before: %5 = matmul(%x, %w, %b) : [4096,512]   %6 = reshape(%5) : [32,128,512]   %7 = relu(%6)
//   // after:  %8 = matmul(%x, %w, %b) {activation=relu} : [4096,512]   %9 = reshape(%8) : [32,128,512]
//
// Only where the product before the activation has no other reader, as in inference programs and
// in training steps (relu's gradient reads its output, not its input): the layer then writes its
// output once instead of twice. relu only, on float32 products: the GEMM applies it for nothing
// (kernels_bench's matmul_epilogue), where oneDNN 2.6's GELU post-ops cost more than Kestrel's own
// GELU pass after the product, so GELU stays a pass of its own.
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
