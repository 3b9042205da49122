// Next-token training data for causal language models (models::GPT): inputs and shifted labels.
//
//   models::CausalLmBatch batch = models::causal_lm_batch({{5, 9, 2, 7}, {5, 3}});
//   // batch.inputs: "input_ids"      [[5, 9, 2, 7], [5, 3, 0, 0]]      (right-padded with pad_id)
//   //               "attention_mask" [[1, 1, 1, 1], [1, 1, 0, 0]]
//   // batch.labels:                  [[9, 2, 7, -100], [3, -100, -100, -100]]
//   model.fit(batch.inputs, batch.labels, {.batch_size = 16});
//
//   // In a dataset pipeline, from ids already padded (e.g. by padded_batch):
//   Tensor labels = models::causal_lm_labels(ids, mask);
//
// Position t's label is the token at t + 1, or -100 where there is none (the last token of a row,
// and padding), which SparseCategoricalCrossentropy({.from_logits = true, .ignore_class = -100})
// leaves out of the loss and its mean. The model sees the whole row; the loss, not the inputs, is
// shifted, as in Hugging Face's causal LM collators.
#pragma once

#include <cstdint>
#include <vector>

#include "framework/core/tensor.h"
#include "framework/model/inputs.h"

namespace kestrel::models {

/// The label of positions with no next token: the usual ignore_class of the loss.
inline constexpr std::int64_t kIgnoredLabel = -100;

struct CausalLmBatchOptions {
  std::int64_t length = 0;  ///< columns of the batch; 0 = the longest row's length
  std::int64_t pad_id = 0;  ///< the id written into padding positions (the mask marks them)
};

struct CausalLmBatch {
  Inputs inputs;  ///< "input_ids" and "attention_mask", int64 [rows, length]
  Tensor labels;  ///< int64 [rows, length]: the next token, or kIgnoredLabel
};

/// A training batch from token id rows of any lengths up to options.length.
CausalLmBatch causal_lm_batch(const std::vector<std::vector<std::int64_t>>& rows, CausalLmBatchOptions options = {});

/// Next-token labels int64 [B, L] for input_ids [B, L] (int32/int64); attention_mask [B, L]
/// (nonzero = real token) marks padding, and an undefined mask means every token is real. Built
/// from ops alone, so it can run inside a Dataset map or a traced step.
Tensor causal_lm_labels(const Tensor& input_ids, const Tensor& attention_mask = Tensor());

}  // namespace kestrel::models
