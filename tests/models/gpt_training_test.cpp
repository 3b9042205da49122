// GPT trains: fit learns to continue arithmetic sequences, far below the unigram loss, and greedy
// generation then continues a prompt the same way.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <random>

#include "framework/core/random.h"
#include "framework/losses/losses.h"
#include "framework/optimizers/optimizers.h"
#include "models/gpt.h"
#include "models/gpt_data.h"

namespace kestrel {
namespace {

constexpr std::int64_t kTokens = 16;  // ids 1..16; 0 pads

// Rows count modulo 16 from a random start, by a stride of 1 or 3 chosen per row, for 8..16
// tokens: the first label can be either stride, every later one follows from the two tokens
// before it — which takes attention to the previous position, not just the current token.
models::CausalLmBatch counting_rows(std::int64_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<std::vector<std::int64_t>> rows;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t stride = (gen() & 1u) != 0 ? 1 : 3;
    const int length = std::uniform_int_distribution<int>(8, 16)(gen);
    std::int64_t token = std::uniform_int_distribution<std::int64_t>(0, kTokens - 1)(gen);
    std::vector<std::int64_t> row;
    for (int t = 0; t < length; ++t, token = (token + stride) % kTokens) row.push_back(token + 1);
    rows.push_back(row);
  }
  return models::causal_lm_batch(rows, {.length = 16});
}

// The cross-entropy of always predicting the labels' overall frequencies.
double unigram_loss(const Tensor& labels) {
  std::map<std::int64_t, double> counts;
  double total = 0.0;
  for (std::int64_t label : labels.to_vector<std::int64_t>()) {
    if (label == models::kIgnoredLabel) continue;
    counts[label] += 1.0;
    total += 1.0;
  }
  double entropy = 0.0;
  for (const auto& [label, count] : counts) entropy -= count / total * std::log(count / total);
  return entropy;
}

TEST(GptTraining, FitLearnsToContinueSequences) {
  clear_session();
  random::set_global_seed(23);
  const auto start = std::chrono::steady_clock::now();
  const models::CausalLmBatch train = counting_rows(512, 1);
  const models::CausalLmBatch test = counting_rows(128, 2);
  models::GPT model({.vocab_size = kTokens + 1,
                     .hidden_size = 32,
                     .num_layers = 2,
                     .num_heads = 2,
                     .intermediate_size = 64,
                     .max_length = 16,
                     .dropout = 0.0});
  model.compile({.optimizer = optimizers::AdamW({.learning_rate = 1e-2, .weight_decay = 0.01}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true, .ignore_class = -100})});
  History history = model.fit(train.inputs, train.labels, {.batch_size = 32, .epochs = 12, .verbose = 0});
  const double test_loss = model.evaluate(test.inputs, test.labels, {.verbose = 0}).at("loss");
  const double unigram = unigram_loss(test.labels);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "counting task: unigram loss " << unigram << ", first epoch " << history.history.at("loss").front()
            << ", last epoch " << history.history.at("loss").back() << ", test " << test_loss << " in " << seconds
            << " s\n";
  RecordProperty("test_loss", std::to_string(test_loss));
  // The best possible is about log(2) / 11 ~ 0.06 (only each row's first stride is a guess).
  EXPECT_LT(test_loss, 0.1 * unigram);

  // Greedy decoding continues a stride-3 prompt by threes, and a stride-1 prompt by ones.
  const Tensor prompt = Tensor::from_vector<std::int64_t>({1, 4, 7, 10, 5, 6, 7, 8}, {2, 4});
  EXPECT_EQ(model.generate(prompt, {.max_new_tokens = 6}).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{1, 4, 7, 10, 13, 16, 3, 6, 9, 12, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}));
}

}  // namespace
}  // namespace kestrel
