// A BERT-style classifier (padded token batches, named inputs, AdamW) trains the same on 8
// replicas as on one, eagerly and compiled.
#include <gtest/gtest.h>

#include <cmath>

#include "framework/core/random.h"
#include "framework/losses/losses.h"
#include "framework/optimizers/optimizers.h"
#include "models/bert_classifier.h"
#include "strategies/tpu_strategy.h"
#include "tests/models/bert_test_util.h"

namespace kestrel::distribute {
namespace {

// 20 global batches of 16 rows: ids in [3, 32), per-row lengths 4..12 of 12, three classes.
std::vector<std::pair<Inputs, Tensor>> token_batches() {
  std::vector<std::pair<Inputs, Tensor>> out;
  for (int step = 0; step < 20; ++step) {
    const auto lengths = random::randint({16}, random::Key(600 + step), 4, 13).to_vector<std::int64_t>();
    const auto ids = random::randint({16 * 12}, random::Key(700 + step), 3, 32).to_vector<std::int64_t>();
    std::vector<std::vector<std::int64_t>> rows;
    for (int r = 0; r < 16; ++r) {
      rows.emplace_back(ids.begin() + r * 12, ids.begin() + r * 12 + lengths[static_cast<std::size_t>(r)]);
    }
    out.emplace_back(testing::padded(rows, 12), random::randint({16}, random::Key(800 + step), 0, 3));
  }
  return out;
}

std::vector<Tensor> train(const Strategy* strategy, bool jit) {
  clear_session();
  random::set_global_seed(13);
  std::optional<DistributionScope> scope;
  if (strategy != nullptr) scope.emplace(*strategy);
  models::BertClassifier model(testing::small_bert());
  model.compile({.optimizer = optimizers::AdamW({.learning_rate = 3e-3, .weight_decay = 0.01}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .jit_compile = jit});
  for (const auto& [x, y] : token_batches()) model.train_on_batch(x, y);
  return model.get_weights();
}

void expect_same_weights(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    std::vector<float> g = got[i].to_vector<float>(), w = want[i].to_vector<float>();
    for (std::size_t k = 0; k < w.size(); ++k) {
      ASSERT_NEAR(g[k], w[k], 1e-5 * (1.0 + std::abs(w[k]))) << "weight " << i << " element " << k;
    }
  }
}

TEST(BertReplicas, EightTrainLikeOneEagerlyAndCompiled) {
  TPUStrategy tpu(TPUClusterResolver::local());
  for (const bool jit : {false, true}) {
    SCOPED_TRACE(jit ? "jit" : "eager");
    expect_same_weights(train(&tpu, jit), train(nullptr, jit));
  }
}

}  // namespace
}  // namespace kestrel::distribute
