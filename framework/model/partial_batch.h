// Partial batches under jit_compile: the last batch of an epoch is usually smaller than the
// rest, and a new shape would compile the step again. Instead it is padded with zero rows up to
// the compiled batch size and the padding is masked out (Batch::row_mask), so the step replays
// the compiled program and every sample still counts exactly once.
//
//   Batch padded = detail::pad_rows(batch, 32);          // 20 real rows + 12 padding rows
//   Tensor loss = detail::loss_of_real_rows(loss_fn, padded, y_pred);   // as on the 20 rows alone
#pragma once

#include <cstdint>

#include "framework/losses/loss.h"
#include "framework/model/batch.h"

namespace kestrel::detail {

/// The rows in a batch (its inputs' leading dimension).
std::int64_t rows_of(const Batch& batch);

/// Every tensor of the batch padded with zero rows up to `rows` (>= its own rows), with a
/// row_mask of 1 for its rows and 0 for the padding. A batch of `rows` rows gets a mask of ones;
/// a batch that has a row mask keeps it for its rows.
Batch pad_rows(const Batch& batch, std::int64_t rows);

/// The rows a batch keeps after its output is computed on the padded batch: the first `rows`.
Tensor first_rows(const Tensor& output, std::int64_t rows);

/// The loss over the real rows of a padded batch. Padding rows weigh 0; a mean-reducing loss
/// divides by every element it counted, padding included, so its value is rescaled by all
/// counted elements over the real ones (the loss's own mask, e.g. ignore_class, taken into
/// account) — as Keras folds masks into sample weights.
Tensor loss_of_real_rows(const losses::Loss& loss, const Batch& batch, const Tensor& y_pred);

/// The weights that leave padding rows out: sample_weight times row_mask (either may be undefined).
Tensor weight_of_real_rows(const Tensor& sample_weight, const Tensor& row_mask);

}  // namespace kestrel::detail
