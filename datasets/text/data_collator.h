// Data collators: turn a list of tokenized examples into one padded batch, as Hugging Face's
// DataCollatorWithPadding and DataCollatorForLanguageModeling do.
//
//   auto tok = text::WordPieceTokenizer::from_vocab_file("vocab.txt");
//   auto train = data::TextLineDataset({"train.txt"})
//                    .map(tok.map_fn({.truncation = text::Truncation::longest_first, .max_length = 128}))
//                    .collate(32, text::DataCollatorForLanguageModeling(tok, {.mlm_probability = 0.15,
//                                                                             .pad_to_multiple_of = 8,
//                                                                             .seed = 42}));
//   // each batch: input_ids (15% of the real tokens selected: 80% -> [MASK], 10% -> a random
//   // token, 10% kept), attention_mask, token_type_ids, labels (-100 where not selected): int64 [32, L]
//
//   auto classify = examples.collate(32, text::DataCollatorWithPadding(tok, {.pad_to_multiple_of = 8}));
//   // input_ids, token_type_ids, attention_mask: int64 [32, L]; "label" is renamed "labels": int64 [32]
//
// An example is a data::Element holding int64 [L] tensors input_ids (required), token_type_ids,
// attention_mask and special_tokens_mask, plus any other values. The tokenizer's keys are padded
// with tokenizer.pad(); the other values are stacked along a new first axis (tensors must have equal
// shapes and dtypes; strings become a string tensor). Collators keep their own copy of the
// tokenizer, so a dataset holding one never refers to a destroyed tokenizer.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "datasets/text/wordpiece_tokenizer.h"
#include "framework/data/element.h"

namespace kestrel::text {

/// The value ignored by the losses (Hugging Face's and PyTorch's ignore_index).
inline constexpr std::int64_t kIgnoreIndex = -100;

struct DataCollatorWithPaddingOptions {
  Padding padding = Padding::longest;
  /// For Padding::max_length (unset: the tokenizer's model_max_length).
  std::optional<std::int64_t> max_length = std::nullopt;
  /// Round the padded length up to a multiple of this (0: no rounding); 8 or 32 keeps the number
  /// of distinct shapes, and so of jit compilations, small.
  std::int64_t pad_to_multiple_of = 0;
};

class DataCollatorWithPadding {
 public:
  explicit DataCollatorWithPadding(const WordPieceTokenizer& tokenizer, DataCollatorWithPaddingOptions options = {});

  /// Pads the tokenizer's keys to int64 [B, L], stacks the other values, and renames "label" and
  /// "label_ids" to "labels". Throws ValueError for an empty list or a missing input_ids.
  data::Element operator()(const std::vector<data::Element>& features) const;

  const DataCollatorWithPaddingOptions& options() const { return options_; }

 private:
  std::shared_ptr<const WordPieceTokenizer> tokenizer_;
  DataCollatorWithPaddingOptions options_;
};

struct DataCollatorForLanguageModelingOptions {
  /// Masked language modelling (BERT); false: causal language modelling (GPT), where labels are
  /// the input ids with padding set to -100 and the model shifts them itself.
  bool mlm = true;
  /// The share of real (not special, not padding) tokens selected for prediction, in [0, 1].
  double mlm_probability = 0.15;
  /// The share of selected tokens replaced by [MASK].
  double mask_replace_prob = 0.8;
  /// The share of selected tokens replaced by a random token (the rest stay unchanged).
  double random_replace_prob = 0.1;
  std::int64_t pad_to_multiple_of = 0;
  /// Batch k (the k-th call on this object) draws its masks from random::Key(seed).fold_in(k):
  /// each batch gets fresh masks, and a run is reproducible. A copy (the one each pipeline's
  /// collate() keeps) counts on from the count at copying, on its own, so one pipeline's progress
  /// never changes another's masks.
  std::uint64_t seed = 0;
};

class DataCollatorForLanguageModeling {
 public:
  /// Throws ValueError when a probability is outside [0, 1], when mask_replace_prob +
  /// random_replace_prob > 1, or when mlm is set and the tokenizer has no mask token.
  explicit DataCollatorForLanguageModeling(const WordPieceTokenizer& tokenizer,
                                           DataCollatorForLanguageModelingOptions options = {});

  /// Pads to the longest example (rounded up to pad_to_multiple_of), then adds "labels" int64
  /// [B, L] and, for mlm, masks input_ids. special_tokens_mask, when given, says which tokens are
  /// special (else the tokenizer's special ids do), and is removed from the batch.
  data::Element operator()(const std::vector<data::Element>& features) const;

  /// Number of batches collated so far by this object (and, for a copy, by the original before it).
  std::uint64_t calls() const { return calls_.load(); }
  const DataCollatorForLanguageModelingOptions& options() const { return options_; }

 private:
  std::shared_ptr<const WordPieceTokenizer> tokenizer_;
  DataCollatorForLanguageModelingOptions options_;
  // Copies by value: a shared count would let the order in which pipelines run (prefetch threads)
  // decide which masks each batch gets.
  class CallCounter {
   public:
    CallCounter() = default;
    CallCounter(const CallCounter& other) : count_(other.count_.load()) {}
    CallCounter& operator=(const CallCounter& other) {
      count_ = other.count_.load();
      return *this;
    }
    std::uint64_t take() const { return count_.fetch_add(1); }
    std::uint64_t load() const { return count_.load(); }

   private:
    mutable std::atomic<std::uint64_t> count_{0};
  };
  CallCounter calls_;
};

}  // namespace kestrel::text
