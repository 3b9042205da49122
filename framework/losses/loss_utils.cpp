#include "framework/losses/loss_utils.h"

#include <string>

#include "framework/core/error.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::losses {

std::pair<Tensor, Tensor> squeeze_or_expand_to_same_rank(const Tensor& x1, const Tensor& x2, bool expand_rank_1) {
  Tensor a = x1, b = x2;
  const int rank_a = a.rank(), rank_b = b.rank();
  if (rank_a == rank_b + 1 && a.shape()[-1] == 1) {
    if (rank_b == 1 && expand_rank_1) {
      b = ops::expand_dims(b, -1);
    } else {
      a = ops::squeeze(a, {-1});
    }
  } else if (rank_b == rank_a + 1 && b.shape()[-1] == 1) {
    if (rank_a == 1 && expand_rank_1) {
      a = ops::expand_dims(a, -1);
    } else {
      b = ops::squeeze(b, {-1});
    }
  }
  return {a, b};
}

void check_defined(std::string_view who, const Tensor& y_true, const Tensor& y_pred) {
  if (!y_true.defined()) throw ValueError(op_message(who, "y_true is an undefined tensor; pass the targets"));
  if (!y_pred.defined()) throw ValueError(op_message(who, "y_pred is an undefined tensor; pass the predictions"));
}

void check_same_shape(std::string_view who, const Tensor& y_true, const Tensor& y_pred) {
  if (y_true.shape() != y_pred.shape()) {
    throw ShapeError(op_message(who, "y_true is " + y_true.shape().to_string() + " and y_pred is " +
                                         y_pred.shape().to_string() + ": they must have the same shape"));
  }
}

Tensor to_float32(const Tensor& x) { return ops::cast(x, DType::float32); }

Tensor broadcast_sample_weight(std::string_view who, const Tensor& sample_weight, const Shape& shape) {
  Tensor w = to_float32(sample_weight);
  if (w.rank() == shape.rank() + 1 && w.shape()[-1] == 1) w = ops::squeeze(w, {-1});
  auto mismatch = [&] {
    return ShapeError(op_message(who, "sample_weight is " + sample_weight.shape().to_string() +
                                          " but the per-sample values are " + shape.to_string() +
                                          ": sample_weight must broadcast to them, its axes lining up with "
                                          "their leading axes"));
  };
  if (w.rank() > shape.rank()) throw mismatch();
  Shape padded = w.shape();
  while (padded.rank() < shape.rank()) padded.push_back(1);
  for (int d = 0; d < shape.rank(); ++d) {
    if (padded[d] != 1 && padded[d] != shape[d]) throw mismatch();
  }
  return ops::broadcast_to(ops::reshape(w, padded), shape);
}

Tensor clip(const Tensor& x, double lo, double hi) {
  return ops::minimum(ops::maximum(x, ops::scalar_like(x, lo)), ops::scalar_like(x, hi));
}

}  // namespace kestrel::losses
