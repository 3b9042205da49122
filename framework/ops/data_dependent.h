// Ops whose output shape depends on the data: eager only. Under jit_compile a program's shapes are
// fixed before any data exists (XLA's rule 2), so these raise JitError with the static-shape fix.
//
//   Tensor kept = ops::boolean_mask(losses, ops::not_equal(labels, -100));   // eager: [n_kept]
//   // jit: keep the shape, weigh instead —
//   Tensor mask = ops::cast(ops::not_equal(labels, -100), DType::float32);
//   Tensor loss = ops::sum(losses * mask) / ops::sum(mask);
#pragma once

#include "framework/core/tensor.h"

namespace kestrel::ops {

/// The rows of x (along its first dimension) where mask ([n] bool) is true, as tf.boolean_mask.
/// Differentiable with respect to x.
Tensor boolean_mask(const Tensor& x, const Tensor& mask);
/// The distinct values of a 1-D tensor, in order of first appearance (tf.unique's first output).
Tensor unique(const Tensor& x);
/// The int64 [n, rank] indices of x's nonzero elements in row-major order (np.argwhere).
Tensor nonzero(const Tensor& x);

}  // namespace kestrel::ops
