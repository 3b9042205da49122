// layer normalization, its gradients and softmax cross-entropy with bfloat16 operands.
//
//   kernels::layer_norm_bfloat16(x, gamma, beta, y, 1e-5f);   // any of them bfloat16, the rest float32
//
// layer norm's kernels (kernels::cpu()) read and write bfloat16 rows themselves; here its
// bfloat16 gamma and beta are widened once into the calling thread's buffer, and its gamma
// gradient sums rows in groups fixed by the shape (for float32 operands too, so that both dtypes
// sum alike). The cross-entropy widens whole rows, as many as fill about 16 KiB of float32, into
// the calling thread's buffer, puts them through the float32 kernel and rounds them as they are
// stored, never a float32 copy of the whole tensor; a run is widened to where it would sit in a
// whole widened tensor modulo 64 bytes (tensor data is 64-byte aligned), so Eigen's vector loops
// split it alike. Every result has the bits of widening every bfloat16 operand whole, the float32
// kernel and rounding (framework/ops/dispatch.cpp). softmax reads bfloat16 itself
// (kernels::cpu().softmax).
#pragma once

#include "framework/core/tensor.h"

namespace kestrel::kernels {

/// layer_norm of x [..., d] with gamma and beta [d] into y (x's dtype), each float32 or bfloat16.
void layer_norm_bfloat16(const TensorView& x, const TensorView& gamma, const TensorView& beta, const TensorView& y,
                         float epsilon);

/// Its gradient in x, dx (x's dtype), from x, gamma and dy, each float32 or bfloat16.
void layer_norm_backprop_bfloat16(const TensorView& x, const TensorView& gamma, const TensorView& dy,
                                  const TensorView& dx, float epsilon);

/// sparse_softmax_cross_entropy of bfloat16 logits [rows, classes] (any leading shape) into the
/// float32 loss [rows], labels int32 or int64, checked.
void sparse_softmax_cross_entropy_bfloat16(const TensorView& logits, const TensorView& labels, const TensorView& loss,
                                           std::int64_t ignore_index);

/// Its gradient in logits, dlogits (float32 or bfloat16), from bfloat16 logits and dloss (float32
/// or bfloat16).
void sparse_softmax_cross_entropy_backprop_bfloat16(const TensorView& logits, const TensorView& labels,
                                                    const TensorView& dloss, const TensorView& dlogits,
                                                    std::int64_t ignore_index);

/// layer_norm's gradient in gamma, dgamma [d] = the sum over x's rows of dy * xhat, for float32
/// and bfloat16 operands alike (dgamma in dy's dtype, rounded once): rows go in at most 64 groups
/// whose size depends on the shape alone, each summed in row order into its own partial, and the
/// partials are added in group order, so the bits depend neither on the thread count nor on the
/// operands' dtype.
void layer_norm_gamma_backprop(const TensorView& x, const TensorView& dy, const TensorView& dgamma, float epsilon);

}  // namespace kestrel::kernels
