// Helpers for writing losses and metrics the way Keras does: rank alignment of targets and
// predictions, sample weights lined up with samples, and checks whose errors name the loss or
// metric and both shapes.
//
//   auto [t, p] = losses::squeeze_or_expand_to_same_rank(y_true, y_pred);  // [32] with [32,1] -> [32,1], [32,1]
//   losses::check_same_shape("mean_squared_error", t, p);                   // ShapeError naming both shapes
//   Tensor w = losses::broadcast_sample_weight("mse", sample_weight, per_sample.shape());
#pragma once

#include <string_view>
#include <utility>

#include "framework/core/tensor.h"

namespace kestrel::losses {

/// Keras's epsilon (keras.config.epsilon()): the clip margin for probabilities.
inline constexpr double kEpsilon = 1e-7;

/// Keras's rank alignment. When the ranks differ by one and the longer tensor ends in a size-1
/// axis, a rank-1 partner gains a trailing axis (expand_rank_1) or else the longer one drops it.
std::pair<Tensor, Tensor> squeeze_or_expand_to_same_rank(const Tensor& x1, const Tensor& x2, bool expand_rank_1 = true);

/// Throws ValueError naming `who` when y_true or y_pred is undefined.
void check_defined(std::string_view who, const Tensor& y_true, const Tensor& y_pred);

/// Throws ShapeError "[who] y_true is [..] and y_pred is [..]: ..." unless the shapes are equal.
void check_same_shape(std::string_view who, const Tensor& y_true, const Tensor& y_pred);

/// x as float32: losses and metrics compute in float32 even for bfloat16 or integer inputs,
/// as Keras computes them in the float32 loss dtype.
Tensor to_float32(const Tensor& x);

/// sample_weight as float32 broadcast to `shape`. Its axes line up with the leading axes of
/// `shape` (per-sample weights [batch] weigh every element of a [batch, time] sample); a trailing
/// size-1 axis beyond `shape`'s rank is dropped, as Keras does for [batch, 1] weights.
/// Throws ShapeError naming `who` and both shapes when they do not fit.
Tensor broadcast_sample_weight(std::string_view who, const Tensor& sample_weight, const Shape& shape);

/// min(max(x, lo), hi).
Tensor clip(const Tensor& x, double lo, double hi);

}  // namespace kestrel::losses
