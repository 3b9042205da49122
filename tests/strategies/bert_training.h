// For the strategy tests that train a BERT-style classifier (bert_replicas_test, and the
// multi-worker one): 20 padded token batches and a fixed training run over them.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "framework/core/random.h"
#include "framework/distribute/distribution.h"
#include "framework/losses/losses.h"
#include "framework/optimizers/optimizers.h"
#include "models/bert_classifier.h"
#include "tests/models/bert_test_util.h"

namespace kestrel::testing {

/// 20 global batches of 16 rows: ids in [3, 32), per-row lengths 4..12 of 12, three classes.
inline std::vector<std::pair<Inputs, Tensor>> bert_token_batches() {
  std::vector<std::pair<Inputs, Tensor>> out;
  for (int step = 0; step < 20; ++step) {
    const auto lengths = random::randint({16}, random::Key(600 + step), 4, 13).to_vector<std::int64_t>();
    const auto ids = random::randint({16 * 12}, random::Key(700 + step), 3, 32).to_vector<std::int64_t>();
    std::vector<std::vector<std::int64_t>> rows;
    for (int r = 0; r < 16; ++r) {
      rows.emplace_back(ids.begin() + r * 12, ids.begin() + r * 12 + lengths[static_cast<std::size_t>(r)]);
    }
    out.emplace_back(padded(rows, 12), random::randint({16}, random::Key(800 + step), 0, 3));
  }
  return out;
}

/// A fresh small BERT classifier (seed 13) trained with AdamW on those batches under
/// `distribution` (null: no scope, one replica); its weights at the end.
inline std::vector<Tensor> train_small_bert(const distribute::Distribution* distribution, bool jit) {
  clear_session();
  random::set_global_seed(13);
  std::optional<distribute::DistributionScope> scope;
  if (distribution != nullptr) scope.emplace(*distribution);
  models::BertClassifier model(small_bert());
  model.compile({.optimizer = optimizers::AdamW({.learning_rate = 3e-3, .weight_decay = 0.01}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .jit_compile = jit});
  for (const auto& [x, y] : bert_token_batches()) model.train_on_batch(x, y);
  return model.get_weights();
}

}  // namespace kestrel::testing
