// Tutorial 03's language identification as the TPU tutorials train it (05 on 8 cores, 07 on a pod
// slice over several workers): the pipelines, with static padded batches, and BERT-tiny compiled.
//
//   using namespace kestrel::tutorials::language_id;
//   data::Dataset train = training_pipeline(data.train, tokenizer, 64, 64, 32, seed);
//   models::BertClassifier model(classifier_options(tokenizer.vocab_size(), 12, 64, 32));
//   compile_model(model, 1e-3, total_steps);
#pragma once

#include <cstdint>

#include "datasets/builtin/fortunes.h"
#include "datasets/text/wordpiece_tokenizer.h"
#include "framework/data/dataset.h"
#include "models/bert_classifier.h"

namespace kestrel::tutorials::language_id {

namespace fortunes = datasets::fortunes;

// Training batches all have the global batch size (rule 3): drop_remainder leaves out the last
// few texts of an epoch rather than make a short batch. The batch size is then part of the
// pipeline's static shape, every step gives each core the same number of real texts, and as the
// shuffle draws a new order every epoch, the texts left out are different ones each time.
//
// max_shapes = 0: each batch pads to its longest text, rounded up to pad_to_multiple_of. With a
// budget of max_shapes lengths, texts of like length batch together instead
// (bucket_by_sequence_length), each bucket padded to one length: the lengths, multiples of
// pad_to_multiple_of, that pad the training texts least, chosen from one pass over them. Each
// bucket leaves out its own last few texts.
data::Dataset training_pipeline(const fortunes::Split& split, const text::WordPieceTokenizer& tokenizer,
                                std::int64_t global_batch, std::int64_t max_length, std::int64_t pad_to_multiple_of,
                                std::uint64_t seed, int max_shapes = 0);

// Validation and test batches keep every text: a score must count each one. Their last batch is
// short; fit and evaluate pad it to the global batch with rows masked out of the loss and the
// metrics, so it runs the full batches' program — no new compile, each text counted once.
// They use the training's global batch size (rule 4). A core's memory is planned per program as it
// compiles, and at the training's batch the evaluation step (no backward pass, no gradients) needs
// less than the training step that already fits: the two memory plans in the kestrel.jit log show
// it. A larger evaluation batch is a new, larger plan on every core, first tried when training
// reaches its first evaluation — where a run that has trained for hours can still stop with
// ResourceExhausted.
data::Dataset evaluation_pipeline(const fortunes::Split& split, const text::WordPieceTokenizer& tokenizer,
                                  std::int64_t global_batch, std::int64_t max_length, std::int64_t pad_to_multiple_of);

/// The training, validation and test pipelines, at one global batch (rule 4), the training one
/// shuffled by `seed` and, with max_shapes, bucketed by length.
struct Pipelines {
  data::Dataset train, validation, test;
};
Pipelines make_pipelines(const fortunes::LanguageId& data, const text::WordPieceTokenizer& tokenizer,
                         std::int64_t global_batch, std::int64_t max_length, std::int64_t pad_to_multiple_of,
                         std::uint64_t seed, int max_shapes = 0);

/// Full global batches in an epoch of `train_size` texts (drop_remainder); throws ValueError,
/// naming the flags to change, when there is not one.
std::int64_t steps_per_epoch(std::int64_t train_size, std::int64_t global_batch);
/// The batches one epoch of a training pipeline gives, counted by running through one (a bucketed
/// pipeline's count depends on how many texts fall in each bucket). Its padding statistics are
/// reset after, so they count training alone. Throws ValueError as steps_per_epoch when none.
std::int64_t count_steps_per_epoch(const data::Dataset& train, std::int64_t global_batch);

// Tutorial 03's BERT-tiny. The collator rounds lengths up to the multiple, so the position table
// must reach max_length rounded up the same way.
models::BertOptions classifier_options(std::int64_t vocab_size, std::int64_t num_classes, std::int64_t max_length,
                                       std::int64_t pad_to_multiple_of);

// AdamW with a warm-up over the first tenth of the steps, then a cosine decay to zero, as in
// tutorial 03. jit_compile (rule 2): a TPU core runs nothing but compiled programs. Here it makes
// every replica run one compiled program, whose memory plan is checked against a core's memory as
// it compiles; without it the replicas run op by op, which is the way to debug a model, not to
// train it on a TPU.
void compile_model(models::BertClassifier& model, double learning_rate, std::int64_t total_steps);

}  // namespace kestrel::tutorials::language_id
