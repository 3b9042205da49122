// Matrix multiplication, plain and batched.
//
//   ops::matmul(x, w);                                   // [32,784] x [784,512]
//   ops::matmul(q, k, {.transpose_b = true});            // [B,H,T,D] x [B,H,T,D]^T -> [B,H,T,T]
//   ops::matmul(h, w);                                   // [B,T,D] x [D,O]: h is flattened
//   ops::matmul(x, w, {.bias = b});                      // x w + b, b [O] added as the product is stored
#pragma once

#include "framework/core/tensor.h"

namespace kestrel::ops {

struct MatmulOptions {
  bool transpose_a = false;  ///< use a's last two axes swapped
  bool transpose_b = false;  ///< use b's last two axes swapped
  /// [N], added to every row of the product by the matrix multiply itself (a Dense layer's bias,
  /// with no pass of its own over the output); undefined: none. Of the product's dtype.
  Tensor bias;
};

/// a [..., M, K] x b [..., K, N] -> [..., M, N]. Batch dims must be equal, or one side is a
/// plain matrix, which is applied to every batch element. float32 and bfloat16.
Tensor matmul(const Tensor& a, const Tensor& b, const MatmulOptions& options = {});

}  // namespace kestrel::ops
