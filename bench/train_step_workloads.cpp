#include "bench/train_step_workloads.h"

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/layers/layers.h"
#include "framework/losses/losses.h"
#include "framework/model/sequential.h"
#include "framework/optimizers/optimizers.h"
#include "models/bert_classifier.h"
#include "models/gpt.h"
#include "models/gpt_data.h"

namespace kestrel::bench {
namespace {

// BERT-tiny and GPT-tiny share the token batch's layout: 128 tokens per row, padding included, of
// which 51..128 (uniform per row) are real, ids drawn from a vocabulary of 8,192.
constexpr std::int64_t kTokenLength = 128;
constexpr std::int64_t kShortestRow = 51;
constexpr std::int64_t kVocabulary = 8192;

// Dense 784→512 ReLU → 256 ReLU → 10, with Keras's default initializers.
std::unique_ptr<Model> make_mlp() {
  return std::make_unique<Sequential>(std::initializer_list<LayerArg>{
      layers::Dense(512, {.activation = "relu"}), layers::Dense(256, {.activation = "relu"}), layers::Dense(10)});
}

// Conv 3×3 32 ReLU, MaxPool 2, Conv 3×3 64 ReLU, MaxPool 2, Flatten, Dense 128 ReLU, Dense 10 (valid padding).
std::unique_ptr<Model> make_cnn() {
  return std::make_unique<Sequential>(std::initializer_list<LayerArg>{
      layers::Conv2D(32, {3, 3}, {.activation = "relu"}), layers::MaxPooling2D(),
      layers::Conv2D(64, {3, 3}, {.activation = "relu"}), layers::MaxPooling2D(), layers::Flatten(),
      layers::Dense(128, {.activation = "relu"}), layers::Dense(10)});
}

// BERT-tiny as the reference table defines it, spelled out rather than left to BertOptions' defaults
// so the workload stays fixed if those change. The reference model has no dropout: the table counts
// only matmuls, and the peer runs none either.
std::unique_ptr<Model> make_bert_tiny() {
  return std::make_unique<models::BertClassifier>(models::BertOptions{.vocab_size = kVocabulary,
                                                                      .hidden_size = 128,
                                                                      .num_layers = 2,
                                                                      .num_heads = 2,
                                                                      .intermediate_size = 512,
                                                                      .hidden_act = "gelu",
                                                                      .max_length = kTokenLength,
                                                                      .dropout = 0.0,
                                                                      .num_classes = 2,
                                                                      .type_vocab_size = 0,
                                                                      .use_pooler = true,
                                                                      .layer_norm_epsilon = 1e-12});
}

// GPT-tiny as the reference table defines it, spelled out as BERT-tiny is: pre-LN blocks, tanh GELU
// (GPT-2's, and the peer's), logits through the tied token embedding, no dropout.
std::unique_ptr<Model> make_gpt_tiny() {
  return std::make_unique<models::GPT>(models::GPTOptions{.vocab_size = kVocabulary,
                                                          .hidden_size = 256,
                                                          .num_layers = 4,
                                                          .num_heads = 4,
                                                          .intermediate_size = 1024,
                                                          .hidden_act = models::gelu_approximate(),
                                                          .max_length = kTokenLength,
                                                          .dropout = 0.0,
                                                          .initializer_stddev = 0.02,
                                                          .layer_norm_epsilon = 1e-5});
}

Shape with_batch(std::int64_t batch, std::vector<std::int64_t> sample_shape) {
  sample_shape.insert(sample_shape.begin(), batch);
  return Shape(sample_shape);
}

// Random float samples (seed 0) and 10-class labels, as the MLP and CNN train on.
std::pair<Inputs, Tensor> image_batch(std::int64_t batch, std::vector<std::int64_t> sample_shape) {
  const Tensor x = random::normal(with_batch(batch, std::move(sample_shape)), random::Key(0));
  return {Inputs(x), random::randint({batch}, random::Key(1), 0, 10)};
}

// Per row a seeded length uniform in 51..128 and random ids in [1, vocabulary) up to it: the real
// tokens of a token batch, before padding.
std::vector<std::vector<std::int64_t>> token_rows(std::int64_t batch) {
  const auto lengths =
      random::randint({batch}, random::Key(2), kShortestRow, kTokenLength + 1).to_vector<std::int64_t>();
  const auto ids = random::randint({batch, kTokenLength}, random::Key(0), 1, kVocabulary).to_vector<std::int64_t>();
  std::vector<std::vector<std::int64_t>> rows;
  for (std::int64_t row = 0; row < batch; ++row) {
    const auto begin = ids.begin() + row * kTokenLength;
    rows.emplace_back(begin, begin + lengths[static_cast<std::size_t>(row)]);
  }
  return rows;
}

// Token ids [batch, 128] and their attention mask, both int64 as the tokenizer makes them: token_rows
// right-padded with id 0 and mask 0 (about 31% padding in all). Labels are 2 classes.
std::pair<Inputs, Tensor> classification_batch(std::int64_t batch) {
  std::vector<std::int64_t> ids(static_cast<std::size_t>(batch * kTokenLength), 0);
  std::vector<std::int64_t> mask(ids.size(), 0);
  const auto rows = token_rows(batch);
  for (std::size_t row = 0; row < rows.size(); ++row) {
    for (std::size_t column = 0; column < rows[row].size(); ++column) {
      const std::size_t at = row * static_cast<std::size_t>(kTokenLength) + column;
      ids[at] = rows[row][column];
      mask[at] = 1;
    }
  }
  const Shape shape{batch, kTokenLength};
  Inputs inputs{{"input_ids", Tensor::from_vector<std::int64_t>(ids, shape)},
                {"attention_mask", Tensor::from_vector<std::int64_t>(mask, shape)}};
  return {std::move(inputs), random::randint({batch}, random::Key(1), 0, 2)};
}

// The same rows as a causal LM batch: input_ids and attention_mask as above, and int64 labels [batch,
// 128] holding each position's next token, or -100 (ignored by the loss) on a row's last token and
// on padding.
std::pair<Inputs, Tensor> language_model_batch(std::int64_t batch) {
  models::CausalLmBatch lm = models::causal_lm_batch(token_rows(batch), {.length = kTokenLength, .pad_id = 0});
  return {std::move(lm.inputs), std::move(lm.labels)};
}

// Adam and AdamW with the reference betas (0.9, 0.999) and eps 1e-8 (Keras's default eps is 1e-7).
OptimizerArg optimizer_for(const Workload& w) {
  if (std::string_view(w.name) == "bert_tiny" || std::string_view(w.name) == "gpt_tiny") {
    return optimizers::AdamW(
        {.learning_rate = 1e-3, .weight_decay = 0.01, .beta_1 = 0.9, .beta_2 = 0.999, .epsilon = 1e-8});
  }
  return optimizers::Adam({.learning_rate = 1e-3, .beta_1 = 0.9, .beta_2 = 0.999, .epsilon = 1e-8});
}

}  // namespace

const std::vector<Workload>& train_step_workloads() {
  static const std::vector<Workload> workloads = {
      {"mlp", "MLP", 256, 0.822, 535'818, false},
      {"cnn", "CNN", 128, 2.021, 225'034, false},
      {"bert_tiny", "BERT-tiny", 32, 11.277, 1'478'530, true},
      {"gpt_tiny", "GPT-tiny", 16, 67.646, 5'289'472, true},
  };
  return workloads;
}

const Workload* find_workload(std::string_view name) {
  for (const Workload& w : train_step_workloads()) {
    if (name == w.name) return &w;
  }
  return nullptr;
}

const char* mode_name(Mode mode) { return mode == Mode::jit ? "jit" : "eager"; }

std::optional<Mode> parse_mode(std::string_view name) {
  if (name == "eager") return Mode::eager;
  if (name == "jit") return Mode::jit;
  return std::nullopt;
}

const char* peer_mode_name(Mode mode) { return mode == Mode::jit ? "torchscript" : "eager"; }

bool is_precision(std::string_view name) { return name == "float32" || name == "mixed_bfloat16" || name == "bfloat16"; }

Json train_step_params(const Workload& w, const std::string& mode, const std::string& precision) {
  return {
      {"model", w.name}, {"batch", w.batch}, {"threads", kTrainStepThreads}, {"mode", mode}, {"precision", precision}};
}

std::string train_step_label(const Workload& w, const std::string& mode, const std::string& precision) {
  return case_label("train_step", train_step_params(w, mode, precision));
}

TrainStep make_train_step(const Workload& w, Mode mode, const std::string& precision) {
  const std::string name = w.name;
  random::set_global_seed(0);  // the same weights in every run
  // Layers take the global policy as they are made; the caller's policy comes back afterwards.
  const mixed_precision::PolicyScope policy(precision);
  TrainStep step;
  if (name == "mlp") {
    step.model = make_mlp();
    std::tie(step.inputs, step.labels) = image_batch(w.batch, {784});
    step.model->build(with_batch(w.batch, {784}));
  } else if (name == "cnn") {
    step.model = make_cnn();
    std::tie(step.inputs, step.labels) = image_batch(w.batch, {28, 28, 1});
    step.model->build(with_batch(w.batch, {28, 28, 1}));
  } else if (name == "bert_tiny") {
    step.model = make_bert_tiny();
    std::tie(step.inputs, step.labels) = classification_batch(w.batch);
    step.model->build(Shape{w.batch, kTokenLength});  // BertClassifier builds from the input_ids shape
  } else {
    step.model = make_gpt_tiny();
    std::tie(step.inputs, step.labels) = language_model_batch(w.batch);
    step.model->build(Shape{w.batch, kTokenLength});  // as BertClassifier, from the input_ids shape
  }
  if (step.model->count_params() != w.params) {
    throw ValueError("the " + name + " model has " + std::to_string(step.model->count_params()) +
                     " parameters, the reference " + std::to_string(w.params));
  }
  // No metrics: a step is zero-grad, forward, loss, backward and the optimizer update, as the peer's.
  // GPT-tiny's loss is the mean over the labelled tokens, as PyTorch's ignore_index makes it.
  std::optional<std::int64_t> ignore_class;
  if (name == "gpt_tiny") ignore_class = models::kIgnoredLabel;
  step.model->compile(
      {.optimizer = optimizer_for(w),
       .loss = losses::SparseCategoricalCrossentropy({.from_logits = true, .ignore_class = ignore_class}),
       .jit_compile = mode == Mode::jit});
  return step;
}

}  // namespace kestrel::bench
