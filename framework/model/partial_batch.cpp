#include "framework/model/partial_batch.h"

#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/losses/loss_utils.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::detail {
namespace {

Tensor pad_leading(const Tensor& t, std::int64_t extra) {
  if (!t.defined() || extra == 0) return t;
  std::vector<std::pair<std::int64_t, std::int64_t>> paddings(static_cast<std::size_t>(t.rank()), {0, 0});
  paddings[0] = {0, extra};
  return ops::pad(t, paddings);
}

// row_mask ([rows]) with trailing size-1 axes, to broadcast against a tensor of this rank.
Tensor rows_for_rank(const Tensor& row_mask, int rank) {
  std::vector<std::int64_t> shape(static_cast<std::size_t>(std::max(rank, 1)), 1);
  shape[0] = row_mask.shape()[0];
  return ops::reshape(row_mask, shape);
}

}  // namespace

std::int64_t rows_of(const Batch& batch) { return batch.x.batch_size(); }

Batch pad_rows(const Batch& batch, std::int64_t rows) {
  const std::int64_t real = rows_of(batch);
  if (real > rows) {
    throw ValueError("a batch of " + std::to_string(real) + " rows cannot be padded down to " + std::to_string(rows));
  }
  const std::int64_t extra = rows - real;
  const auto pad = [extra](const Tensor& t) { return pad_leading(t, extra); };
  Batch out;
  out.x = batch.x.map(pad);
  out.y = batch.y.map(pad);
  out.sample_weight = pad_leading(batch.sample_weight, extra);
  if (batch.row_mask.defined()) {
    out.row_mask = pad_leading(batch.row_mask, extra);  // rows already masked stay masked
    return out;
  }
  std::vector<float> mask(static_cast<std::size_t>(rows), 0.0f);
  std::fill(mask.begin(), mask.begin() + real, 1.0f);
  out.row_mask = Tensor::from_vector(mask, {rows});
  return out;
}

Tensor first_rows(const Tensor& output, std::int64_t rows) { return ops::slice_rows(output, 0, rows); }

Tensor weight_of_real_rows(const Tensor& sample_weight, const Tensor& row_mask) {
  if (!row_mask.defined()) return sample_weight;
  if (!sample_weight.defined()) return row_mask;
  return ops::cast(sample_weight, DType::float32) * rows_for_rank(row_mask, sample_weight.rank());
}

Tensor loss_of_real_rows(const losses::Loss& loss, const Batch& batch, const Tensor& y_pred) {
  const Tensor value = loss(batch.y, y_pred, weight_of_real_rows(batch.sample_weight, batch.row_mask));
  if (!batch.row_mask.defined() || loss.reduction() != losses::Reduction::sum_over_batch_size || value.rank() != 0) {
    return value;  // a sum needs no rescaling: padding rows add 0
  }
  // The mean divided by every element it counted; scale it to a mean over the real rows' ones.
  Tensor counted_all, counted_real;
  const Tensor mask = loss.mask(batch.y, y_pred);
  if (mask.defined()) {
    const Tensor m = losses::to_float32(mask);
    counted_all = ops::sum(m);
    counted_real = ops::sum(m * rows_for_rank(batch.row_mask, m.rank()));
  } else {
    // Every row holds as many elements, so rows stand for elements.
    counted_all = Tensor::scalar(static_cast<double>(batch.row_mask.shape()[0]));
    counted_real = ops::sum(batch.row_mask);
  }
  // No real element counted means a zero loss already; max(., 1) only keeps the division finite.
  return value * (counted_all / ops::maximum(counted_real, ops::scalar_like(counted_real, 1.0)));
}

}  // namespace kestrel::detail
