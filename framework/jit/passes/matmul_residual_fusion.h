// MatmulResidualFusion ("matmul_residual_fusion"): a value added to a matrix product of its own
// shape moves into the product, where the GEMM adds it as it stores each element (kernels/gemm.h's
// residual, oneDNN's binary post-op).
//
//   jit::MatmulResidualFusion fusion;
//   fusion.run(graph);   // after bias fusion, before activation and elementwise fusion
//   // before: %5 = matmul(%h, %w, %b) : [4096,128]   %6 = reshape(%5) : [32,128,128]   %7 = add(%6, %x)
//   // after:  %8 = reshape(%x) : [4096,128]   %9 = matmul(%h, %w, %b, %8) {residual} : [4096,128]
//   //         %10 = reshape(%9) : [32,128,128]
//
// A transformer adds a product to its input twice a layer (x + attention_output(h) and
// x + feedforward_output(h)), and its backward pass adds the input gradient of every product to
// the gradient that went around it. Each add is a pass of its own, reading two [tokens, hidden]
// arrays from memory and writing a third: BERT-tiny's 12 took 2.9 ms of an 88 ms step. Fused, the
// residual is read as each tile of the product is stored, still in cache, and the sum is written
// once. Sums of several products (a value read by the query, key and value projections gets three
// input gradients) become a chain, each product adding the one before it.
//
// Rewritten, where the product (and the reshape between) has no other reader: add(P, r) and
// add(r, P), P a 2-D float32 matmul [M, N] without an activation, a scale or a residual (a bias
// may be there), or a reshape of one, and r of the add's own shape (no broadcast). The add's
// result is the same bits: each element is the float32 product (with its bias) plus r's element,
// rounded once, as the add rounds it. bfloat16 products are left alone: there the separate add
// rounds the product first, and the GEMM would round once.
#pragma once

#include <string>

#include "framework/jit/pass.h"

namespace kestrel::jit {

class MatmulResidualFusion final : public Pass {
 public:
  std::string name() const override { return "matmul_residual_fusion"; }
  /// Applies the rewrite above; true when it applied anywhere.
  bool run(Graph& graph) override;
};

}  // namespace kestrel::jit
