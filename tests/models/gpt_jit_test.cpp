// GPT under jit_compile: the compiled train step gives the eager losses step by step, with
// dropout on, a scheduled learning rate, the tied embedding, the causal mask and -100 labels;
// and compiled evaluation over a padded last batch gives the eager loss.
#include <gtest/gtest.h>

#include <cmath>

#include "framework/core/random.h"
#include "framework/losses/losses.h"
#include "framework/optimizers/optimizers.h"
#include "framework/optimizers/schedules.h"
#include "models/gpt.h"
#include "models/gpt_data.h"
#include "tests/models/gpt_test_util.h"

namespace kestrel {
namespace {

using testing::small_gpt;

// 10 steps of 8 rows: ids in [1, 32), per-row lengths 4..12 of 12.
std::vector<models::CausalLmBatch> gpt_batches() {
  std::vector<models::CausalLmBatch> out;
  for (int step = 0; step < 10; ++step) {
    const std::vector<std::int64_t> lengths =
        random::randint({8}, random::Key(600 + step), 4, 13).to_vector<std::int64_t>();
    const std::vector<std::int64_t> ids =
        random::randint({8 * 12}, random::Key(700 + step), 1, 32).to_vector<std::int64_t>();
    std::vector<std::vector<std::int64_t>> rows;
    for (int r = 0; r < 8; ++r) {
      rows.emplace_back(ids.begin() + r * 12, ids.begin() + r * 12 + lengths[static_cast<std::size_t>(r)]);
    }
    out.push_back(models::causal_lm_batch(rows, {.length = 12}));
  }
  return out;
}

models::GPTOptions jit_options() {
  models::GPTOptions options = small_gpt();
  options.dropout = 0.1;
  return options;
}

void compile(models::GPT& model, bool jit) {
  using optimizers::schedules::CosineDecay;
  model.compile({.optimizer = optimizers::AdamW(
                     {.learning_rate = CosineDecay(
                          {.initial_learning_rate = 0.0, .decay_steps = 8, .warmup_target = 3e-3, .warmup_steps = 2}),
                      .weight_decay = 0.01}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true, .ignore_class = -100}),
                 .jit_compile = jit});
}

std::vector<double> train_losses(bool jit, const std::vector<models::CausalLmBatch>& batches) {
  clear_session();
  random::set_global_seed(29);
  models::GPT model(jit_options());
  compile(model, jit);
  std::vector<double> losses;
  for (const models::CausalLmBatch& batch : batches) {
    losses.push_back(model.train_on_batch(batch.inputs, batch.labels).at("loss"));
  }
  EXPECT_EQ(model.jit_stats().compiles, jit ? 1 : 0);
  return losses;
}

TEST(GptJit, CompiledTrainStepMatchesEagerOver10Steps) {
  const std::vector<models::CausalLmBatch> batches = gpt_batches();
  const std::vector<double> eager = train_losses(false, batches);
  const std::vector<double> compiled = train_losses(true, batches);
  ASSERT_EQ(eager.size(), compiled.size());
  for (std::size_t step = 0; step < eager.size(); ++step) {
    EXPECT_LT(std::abs(compiled[step] - eager[step]) / std::abs(eager[step]), 1e-5) << "step " << step;
  }
  EXPECT_NE(eager.front(), eager.back());  // it trains
}

double evaluate_loss(bool jit, const models::CausalLmBatch& data) {
  clear_session();
  random::set_global_seed(31);
  models::GPT model(jit_options());
  compile(model, jit);
  // 8 rows in batches of 3: the last batch is padded to 3 rows, and its padding rows must count
  // neither in the sum nor in the number of labels.
  return model.evaluate(data.inputs, data.labels, {.batch_size = 3, .verbose = 0}).at("loss");
}

TEST(GptJit, CompiledEvaluationMatchesEagerWithAPartialBatch) {
  const models::CausalLmBatch data = gpt_batches().front();
  const double eager = evaluate_loss(false, data);
  const double compiled = evaluate_loss(true, data);
  EXPECT_LT(std::abs(compiled - eager) / std::abs(eager), 1e-5);
}

}  // namespace
}  // namespace kestrel
