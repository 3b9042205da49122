#include "tutorials/common/language_id_pipeline.h"

#include <optional>

#include "datasets/text/data_collator.h"
#include "framework/core/error.h"
#include "framework/losses/losses.h"
#include "framework/optimizers/optimizers.h"
#include "tutorials/common/schedules.h"

namespace kestrel::tutorials::language_id {
namespace {

// The texts, shuffled when a seed is given, tokenized into what the model reads: input_ids and
// attention_mask, as in tutorial 03.
data::Dataset tokenized(const fortunes::Split& split, const text::WordPieceTokenizer& tokenizer,
                        std::int64_t max_length, std::optional<std::uint64_t> shuffle_seed) {
  data::Dataset ds = split.to_dataset();
  if (shuffle_seed) ds = ds.shuffle(split.size(), *shuffle_seed);
  return ds.map(tokenizer.map_fn(
      {.truncation = text::Truncation::longest_first, .max_length = max_length, .return_token_type_ids = false}));
}

// The collator rounds each batch's length up to a multiple (rule 3): every new length is a new
// program to compile, and with texts of every length a batch padded only to its longest text would
// be a new length almost every step. With a multiple of 32 and at most 64 tokens there are at most
// two lengths, so at most two programs per step function, for some padding.
text::DataCollatorWithPadding collator(const text::WordPieceTokenizer& tokenizer, std::int64_t pad_to_multiple_of) {
  return text::DataCollatorWithPadding(tokenizer, {.pad_to_multiple_of = pad_to_multiple_of});
}

}  // namespace

data::Dataset training_pipeline(const fortunes::Split& split, const text::WordPieceTokenizer& tokenizer,
                                std::int64_t global_batch, std::int64_t max_length, std::int64_t pad_to_multiple_of,
                                std::uint64_t seed, int max_shapes) {
  const data::Dataset texts = tokenized(split, tokenizer, max_length, seed);
  if (max_shapes == 0) {
    return texts.collate(global_batch, collator(tokenizer, pad_to_multiple_of), {.drop_remainder = true}).prefetch(2);
  }
  const auto length = [](const data::Element& e) { return e.tensor("input_ids").shape()[0]; };
  return texts
      .bucket_by_sequence_length(
          length, {}, {global_batch},
          {.padding_values = {{"input_ids", static_cast<double>(tokenizer.pad_token_id())}, {"attention_mask", 0.0}},
           .pad_to_multiple_of = pad_to_multiple_of,
           .drop_remainder = true,
           .max_shapes = max_shapes})
      .prefetch(2);
}

data::Dataset evaluation_pipeline(const fortunes::Split& split, const text::WordPieceTokenizer& tokenizer,
                                  std::int64_t global_batch, std::int64_t max_length, std::int64_t pad_to_multiple_of) {
  return tokenized(split, tokenizer, max_length, std::nullopt)
      .collate(global_batch, collator(tokenizer, pad_to_multiple_of))
      .prefetch(2);
}

Pipelines make_pipelines(const fortunes::LanguageId& data, const text::WordPieceTokenizer& tokenizer,
                         std::int64_t global_batch, std::int64_t max_length, std::int64_t pad_to_multiple_of,
                         std::uint64_t seed, int max_shapes) {
  return {
      .train = training_pipeline(data.train, tokenizer, global_batch, max_length, pad_to_multiple_of, seed, max_shapes),
      .validation = evaluation_pipeline(data.validation, tokenizer, global_batch, max_length, pad_to_multiple_of),
      .test = evaluation_pipeline(data.test, tokenizer, global_batch, max_length, pad_to_multiple_of)};
}

std::int64_t steps_per_epoch(std::int64_t train_size, std::int64_t global_batch) {
  const std::int64_t steps = train_size / global_batch;
  if (steps == 0) {
    throw ValueError("the " + std::to_string(train_size) + " training texts do not fill one global batch of " +
                     std::to_string(global_batch) + "; use a smaller --batch-size or a larger --max-per-language");
  }
  return steps;
}

std::int64_t count_steps_per_epoch(const data::Dataset& train, std::int64_t global_batch) {
  std::int64_t steps = 0;
  for ([[maybe_unused]] const data::Element& batch : train) ++steps;
  train.reset_padding_stats();
  if (steps == 0) {
    throw ValueError("an epoch of the training texts gives no full global batch of " + std::to_string(global_batch) +
                     " (each length bucket drops its last partial batch); use a smaller --batch-size, a larger "
                     "--max-per-language or a smaller --max-shapes");
  }
  return steps;
}

models::BertOptions classifier_options(std::int64_t vocab_size, std::int64_t num_classes, std::int64_t max_length,
                                       std::int64_t pad_to_multiple_of) {
  return {.vocab_size = vocab_size,
          .max_length = (max_length + pad_to_multiple_of - 1) / pad_to_multiple_of * pad_to_multiple_of,
          .num_classes = num_classes};
}

void compile_model(models::BertClassifier& model, double learning_rate, std::int64_t total_steps) {
  model.compile({.optimizer = optimizers::AdamW(
                     {.learning_rate = warmup_cosine(learning_rate, total_steps), .weight_decay = 0.01}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"},
                 .jit_compile = true});
}

}  // namespace kestrel::tutorials::language_id
