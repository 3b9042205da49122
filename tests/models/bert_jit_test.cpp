// BertClassifier under jit_compile: the compiled train step gives the eager losses step by step,
// with dropout on (its masks come from the traced step count) and a scheduled learning rate (the
// schedule evaluated on the traced step), over batches whose last one is padded.
#include <gtest/gtest.h>

#include <cmath>

#include "framework/core/random.h"
#include "framework/losses/losses.h"
#include "framework/optimizers/optimizers.h"
#include "framework/optimizers/schedules.h"
#include "models/bert_classifier.h"
#include "tests/models/bert_test_util.h"

namespace kestrel {
namespace {

using testing::small_bert;

// 20 steps of 8 rows: ids in [3, 32), per-row lengths 4..12 of 12, three classes.
struct Batches {
  std::vector<Inputs> x;
  std::vector<Tensor> y;
};

Batches bert_batches() {
  Batches out;
  std::vector<std::vector<std::int64_t>> rows;
  for (int step = 0; step < 20; ++step) {
    rows.clear();
    const std::vector<std::int64_t> lengths =
        random::randint({8}, random::Key(300 + step), 4, 13).to_vector<std::int64_t>();
    const std::vector<std::int64_t> ids =
        random::randint({8 * 12}, random::Key(400 + step), 3, 32).to_vector<std::int64_t>();
    for (int r = 0; r < 8; ++r) {
      rows.emplace_back(ids.begin() + r * 12, ids.begin() + r * 12 + lengths[static_cast<std::size_t>(r)]);
    }
    out.x.push_back(testing::padded(rows, 12));
    out.y.push_back(random::randint({8}, random::Key(500 + step), 0, 3));
  }
  return out;
}

std::vector<double> train_losses(bool jit, const Batches& batches) {
  clear_session();
  random::set_global_seed(11);
  models::BertOptions options = small_bert();
  options.dropout = 0.1;
  models::BertClassifier model(options);
  using optimizers::schedules::CosineDecay;
  model.compile({.optimizer = optimizers::AdamW(
                     {.learning_rate = CosineDecay(
                          {.initial_learning_rate = 0.0, .decay_steps = 15, .warmup_target = 3e-3, .warmup_steps = 5}),
                      .weight_decay = 0.01}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .jit_compile = jit});
  std::vector<double> losses;
  for (std::size_t step = 0; step < batches.x.size(); ++step) {
    losses.push_back(model.train_on_batch(batches.x[step], batches.y[step]).at("loss"));
  }
  EXPECT_EQ(model.jit_stats().compiles, jit ? 1 : 0);
  return losses;
}

TEST(BertJit, CompiledTrainStepMatchesEagerOver20Steps) {
  const Batches batches = bert_batches();
  const std::vector<double> eager = train_losses(false, batches);
  const std::vector<double> compiled = train_losses(true, batches);
  for (std::size_t step = 0; step < eager.size(); ++step) {
    EXPECT_LT(std::abs(compiled[step] - eager[step]) / std::abs(eager[step]), 1e-5) << "step " << step;
  }
  EXPECT_NE(eager.front(), eager.back());  // it trains
}

}  // namespace
}  // namespace kestrel
