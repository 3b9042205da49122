#include "models/gpt_data.h"

#include <algorithm>
#include <string>

#include "framework/core/error.h"
#include "framework/ops/ops.h"

namespace kestrel::models {
namespace {

/// Columns 1.. of x [B, L], with one column of `fill` appended: position t holds x[:, t + 1].
Tensor shifted_left(const Tensor& x, double fill) {
  const std::int64_t length = x.shape()[1];
  return ops::pad(ops::slice(x, {0, 1}, {-1, length - 1}), {{0, 0}, {0, 1}}, fill);
}

}  // namespace

Tensor causal_lm_labels(const Tensor& input_ids, const Tensor& attention_mask) {
  if (!input_ids.defined() || !is_integer(input_ids.dtype()) || input_ids.rank() != 2 || input_ids.shape()[1] == 0) {
    throw ShapeError("[causal_lm_labels] input_ids are " +
                     (input_ids.defined() ? input_ids.spec().to_string() : std::string("undefined")) +
                     "; pass integer token ids [batch, length] with length >= 1");
  }
  if (attention_mask.defined() && attention_mask.shape() != input_ids.shape()) {
    throw ShapeError("[causal_lm_labels] attention_mask is " + attention_mask.shape().to_string() +
                     " but input_ids are " + input_ids.shape().to_string() + "; pass one entry per token");
  }
  const Tensor next_ids = shifted_left(ops::cast(input_ids, DType::int64), static_cast<double>(kIgnoredLabel));
  // Without a mask only the last column has no next token; the shift's fill marks it.
  const Tensor real = attention_mask.defined() ? ops::cast(ops::cast(attention_mask, DType::bool_), DType::int64)
                                               : Tensor::ones(input_ids.shape(), DType::int64);
  const Tensor next_is_real = ops::not_equal(shifted_left(real, 0.0), Tensor::scalar(0, DType::int64));
  return ops::where(next_is_real, next_ids, Tensor::scalar(static_cast<double>(kIgnoredLabel), DType::int64));
}

CausalLmBatch causal_lm_batch(const std::vector<std::vector<std::int64_t>>& rows, CausalLmBatchOptions options) {
  if (rows.empty()) throw ValueError("[causal_lm_batch] got no rows; pass at least one row of token ids");
  if (options.length < 0) {
    throw ValueError("[causal_lm_batch] length is " + std::to_string(options.length) +
                     "; use 0 for the longest row's length or the number of columns wanted");
  }
  std::int64_t longest = 0;
  for (const auto& row : rows) longest = std::max(longest, static_cast<std::int64_t>(row.size()));
  const std::int64_t length = options.length > 0 ? options.length : longest;
  if (longest > length) {
    throw ShapeError("[causal_lm_batch] a row has " + std::to_string(longest) + " tokens but length is " +
                     std::to_string(length) + "; cut rows to at most " + std::to_string(length) +
                     " tokens or pass a larger length");
  }
  if (length == 0) throw ValueError("[causal_lm_batch] every row is empty; pass rows holding token ids");

  std::vector<std::int64_t> ids;
  std::vector<std::int64_t> mask;
  ids.reserve(rows.size() * static_cast<std::size_t>(length));
  mask.reserve(ids.capacity());
  for (const auto& row : rows) {
    for (std::int64_t i = 0; i < length; ++i) {
      const bool real = i < static_cast<std::int64_t>(row.size());
      ids.push_back(real ? row[static_cast<std::size_t>(i)] : options.pad_id);
      mask.push_back(real ? 1 : 0);
    }
  }
  const Shape shape{static_cast<std::int64_t>(rows.size()), length};
  CausalLmBatch batch;
  const Tensor input_ids = Tensor::from_vector<std::int64_t>(ids, shape);
  const Tensor attention_mask = Tensor::from_vector<std::int64_t>(mask, shape);
  batch.inputs = Inputs{{"input_ids", input_ids}, {"attention_mask", attention_mask}};
  batch.labels = causal_lm_labels(input_ids, attention_mask);
  return batch;
}

}  // namespace kestrel::models
