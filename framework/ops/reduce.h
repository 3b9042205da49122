// Reductions over axes.
//
//   ops::sum(x);                                   // all axes -> scalar
//   ops::mean(x, {.axes = {-1}, .keepdims = true}); // [32,128] -> [32,1]
//   ops::max(x, {.axes = {0}});
//   ops::argmax(logits);                           // [32,10] -> int64 [32]
//   ops::sum_to(grad, bias.shape());               // undoes broadcasting (for gradients)
#pragma once

#include <vector>

#include "framework/core/tensor.h"

namespace kestrel::ops {

struct ReduceOptions {
  std::vector<int> axes;  ///< empty: every axis; negative axes count from the end
  bool keepdims = false;  ///< keep reduced axes as size 1
};

Tensor sum(const Tensor& x, const ReduceOptions& options = {});
Tensor mean(const Tensor& x, const ReduceOptions& options = {});
Tensor max(const Tensor& x, const ReduceOptions& options = {});
/// Index of the largest element along axis, as int64 (the first one on ties; a NaN counts as the
/// largest, as in NumPy). The axis is removed. Integer output: no gradient flows through it.
Tensor argmax(const Tensor& x, int axis = -1);

/// Sums x down to `shape`, the reverse of broadcasting shape to x.shape().
Tensor sum_to(const Tensor& x, const Shape& shape);

}  // namespace kestrel::ops
