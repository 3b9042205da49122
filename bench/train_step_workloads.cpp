#include "bench/train_step_workloads.h"

#include <initializer_list>
#include <utility>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/layers/layers.h"
#include "framework/losses/losses.h"
#include "framework/model/sequential.h"
#include "framework/optimizers/optimizers.h"
#include "models/bert_classifier.h"

namespace kestrel::bench {
namespace {

constexpr std::int64_t kBertLength = 128;           // tokens per row, padding included
constexpr std::int64_t kBertShortestRow = 51;       // real tokens per row: uniform in 51..128
constexpr std::int64_t kBertVocabulary = 8192;

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
  return std::make_unique<models::BertClassifier>(models::BertOptions{.vocab_size = kBertVocabulary,
                                                                      .hidden_size = 128,
                                                                      .num_layers = 2,
                                                                      .num_heads = 2,
                                                                      .intermediate_size = 512,
                                                                      .hidden_act = "gelu",
                                                                      .max_length = kBertLength,
                                                                      .dropout = 0.0,
                                                                      .num_classes = 2,
                                                                      .type_vocab_size = 0,
                                                                      .use_pooler = true,
                                                                      .layer_norm_epsilon = 1e-12});
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

// Token ids [batch, 128] and their attention mask, both int64 as the tokenizer makes them: each row
// has a seeded length uniform in 51..128, random ids in [1, vocabulary) up to it, then id 0 and
// mask 0 (about 31% padding in all). Labels are 2 classes.
std::pair<Inputs, Tensor> token_batch(std::int64_t batch) {
  const auto lengths = random::randint({batch}, random::Key(2), kBertShortestRow, kBertLength + 1).to_vector<std::int64_t>();
  auto ids = random::randint({batch, kBertLength}, random::Key(0), 1, kBertVocabulary).to_vector<std::int64_t>();
  std::vector<std::int64_t> mask(ids.size(), 1);
  for (std::int64_t row = 0; row < batch; ++row) {
    for (std::int64_t column = lengths[static_cast<std::size_t>(row)]; column < kBertLength; ++column) {
      const auto at = static_cast<std::size_t>(row * kBertLength + column);
      ids[at] = 0;
      mask[at] = 0;
    }
  }
  const Shape shape{batch, kBertLength};
  Inputs inputs{{"input_ids", Tensor::from_vector<std::int64_t>(ids, shape)},
                {"attention_mask", Tensor::from_vector<std::int64_t>(mask, shape)}};
  return {std::move(inputs), random::randint({batch}, random::Key(1), 0, 2)};
}

// Adam and AdamW with the reference betas (0.9, 0.999) and eps 1e-8 (Keras's default eps is 1e-7).
OptimizerArg optimizer_for(const Workload& w) {
  if (std::string_view(w.name) == "bert_tiny") {
    return optimizers::AdamW(
        {.learning_rate = 1e-3, .weight_decay = 0.01, .beta_1 = 0.9, .beta_2 = 0.999, .epsilon = 1e-8});
  }
  return optimizers::Adam({.learning_rate = 1e-3, .beta_1 = 0.9, .beta_2 = 0.999, .epsilon = 1e-8});
}

}  // namespace

const std::vector<Workload>& train_step_workloads() {
  static const std::vector<Workload> workloads = {
      {"mlp", "MLP", 256, 0.822, 535'818},
      {"cnn", "CNN", 128, 2.021, 225'034},
      {"bert_tiny", "BERT-tiny", 32, 11.277, 1'478'530},
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

Json train_step_params(const Workload& w, const std::string& mode) {
  return {{"model", w.name}, {"batch", w.batch}, {"threads", kTrainStepThreads}, {"mode", mode}};
}

std::string train_step_label(const Workload& w, const std::string& mode) {
  return case_label("train_step", train_step_params(w, mode));
}

TrainStep make_train_step(const Workload& w, Mode mode) {
  const std::string name = w.name;
  random::set_global_seed(0);  // the same weights in every run
  TrainStep step;
  if (name == "mlp") {
    step.model = make_mlp();
    std::tie(step.inputs, step.labels) = image_batch(w.batch, {784});
    step.model->build(with_batch(w.batch, {784}));
  } else if (name == "cnn") {
    step.model = make_cnn();
    std::tie(step.inputs, step.labels) = image_batch(w.batch, {28, 28, 1});
    step.model->build(with_batch(w.batch, {28, 28, 1}));
  } else {
    step.model = make_bert_tiny();
    std::tie(step.inputs, step.labels) = token_batch(w.batch);
    step.model->build(Shape{w.batch, kBertLength});  // BertClassifier builds from the input_ids shape
  }
  if (step.model->count_params() != w.params) {
    throw ValueError("the " + name + " model has " + std::to_string(step.model->count_params()) +
                     " parameters, the reference " + std::to_string(w.params));
  }
  // No metrics: a step is zero-grad, forward, loss, backward and the optimizer update, as the peer's.
  step.model->compile({.optimizer = optimizer_for(w),
                       .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                       .jit_compile = mode == Mode::jit});
  return step;
}

}  // namespace kestrel::bench
