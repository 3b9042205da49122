// MatmulBiasFusion ("matmul_bias_fusion"): a bias added to a matrix product moves into the product
// itself, where the GEMM adds it as it stores each row (oneDNN's bias; kernels/gemm.h).
//
//   jit::MatmulBiasFusion fusion;
//   fusion.run(graph);   // before elementwise fusion, which would otherwise take the add
//   // before: %5 = matmul(%x, %w) : [4096,512]   %6 = reshape(%5) : [32,128,512]   %7 = add(%6, %b)
//   // after:  %8 = matmul(%x, %w, %b) : [4096,512]   %9 = reshape(%8) : [32,128,512]
//
// Without it, a Dense layer's bias add is a pass of its own over the product, and where the sum
// is read twice (GELU and its gradient read the pre-activation; attention's key and value feed a
// transpose) it is written out and read back whole: for BERT-tiny's feed-forward layer, 8 MiB
// each way. With it, the product is written once, already biased.
//
// Rewritten, where the product (and the reshape between) has no other reader: add(P, b) and
// add(b, P), P a 2-D float32 matmul [M, N] or a reshape of one to [rows..., cols...] with rows'
// product M and cols' product N, and b float32 holding N values laid out as the trailing cols (a
// Dense bias [N], or an attention projection's [heads, head_dim]). The add's result is the same
// bits: each element gets its one bias value added once, to the float32 sum. bfloat16 products
// are left alone: there the separate add rounds twice and the GEMM's bias once, so the program
// would differ from its eager ops (Dense itself puts its bias in the GEMM, eager and compiled).
#pragma once

#include <string>

#include "framework/jit/pass.h"

namespace kestrel::jit {

class MatmulBiasFusion final : public Pass {
 public:
  std::string name() const override { return "matmul_bias_fusion"; }
  /// Applies the rewrite above; true when it applied anywhere.
  bool run(Graph& graph) override;
};

}  // namespace kestrel::jit
