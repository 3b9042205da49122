// Shape and indexing ops.
//
//   ops::reshape(x, {32, -1});                  // one -1 is inferred
//   ops::transpose(x, {0, 2, 1, 3});
//   ops::slice(x, {0, 1}, {-1, 4});             // begin, size (-1: to the end), as tf.slice
//   ops::concat({a, b}, /*axis=*/-1);
//   ops::pad(x, {{0, 0}, {1, 2}});              // (before, after) per axis, zeros
//   ops::gather(embeddings, token_ids);         // embedding lookup along axis 0
//   ops::one_hot(labels, 10);
#pragma once

#include <initializer_list>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "framework/core/tensor.h"

namespace kestrel::ops {

/// Same data, new shape; at most one dim may be -1 (inferred). Shares x's buffer.
Tensor reshape(const Tensor& x, const std::vector<std::int64_t>& shape);
Tensor reshape(const Tensor& x, std::initializer_list<std::int64_t> shape);
Tensor reshape(const Tensor& x, const Shape& shape);

/// Broadcasts x to shape (NumPy rules).
Tensor broadcast_to(const Tensor& x, const Shape& shape);

/// Permutes axes; an empty perm reverses them.
Tensor transpose(const Tensor& x, const std::vector<int>& perm = {});

/// The block starting at begin with the given size per axis (size -1: to the end), as tf.slice.
Tensor slice(const Tensor& x, const std::vector<std::int64_t>& begin, const std::vector<std::int64_t>& size);
/// Rows [begin, end) along the first axis (a batch's samples); an undefined x stays undefined.
Tensor slice_rows(const Tensor& x, std::int64_t begin, std::int64_t end);

/// Joins tensors of equal dtype along axis; all other dims must match.
Tensor concat(const std::vector<Tensor>& xs, int axis = 0);

/// Pads each axis with (before, after) elements of constant_value.
Tensor pad(const Tensor& x, const std::vector<std::pair<std::int64_t, std::int64_t>>& paddings,
           double constant_value = 0.0);

/// params[..., indices, ...] along axis: the output shape is params.shape[:axis] + indices.shape +
/// params.shape[axis+1:]. Indices (int32/int64) outside [0, params.shape[axis]) throw IndexError.
Tensor gather(const Tensor& params, const Tensor& indices, int axis = 0);

/// The transpose of gather: zeros of `shape`, then updates added at indices along axis
/// (repeated indices accumulate). updates has the shape gather would produce.
Tensor scatter_add(const Tensor& indices, const Tensor& updates, const Shape& shape, int axis = 0);

struct OneHotOptions {
  DType dtype = DType::float32;
  double on_value = 1.0;
  double off_value = 0.0;
};
/// indices [...] -> [..., depth]; an index outside [0, depth) (e.g. -100 padding) gives an all-off row.
Tensor one_hot(const Tensor& indices, std::int64_t depth, const OneHotOptions& options = {});

/// Inserts a size-1 axis (reshape).
Tensor expand_dims(const Tensor& x, int axis);
/// Removes the given size-1 axes (all size-1 axes when empty).
Tensor squeeze(const Tensor& x, const std::vector<int>& axes = {});

}  // namespace kestrel::ops

namespace kestrel {

class Primitive;

namespace detail {

/// The axis a scatter_add primitive adds along; nullopt for any other primitive (for the jit's
/// passes, which see primitives rather than ops).
std::optional<int> scatter_add_axis(const Primitive& primitive);

/// The permutation of a transpose primitive (output axis k reads input axis perm[k]); nullopt for
/// any other primitive.
std::optional<std::vector<int>> transpose_perm(const Primitive& primitive);

/// A reshape to `shape` (for the jit's passes, which add primitives to graphs).
std::shared_ptr<const Primitive> reshape_primitive(const Shape& shape);

}  // namespace detail
}  // namespace kestrel
