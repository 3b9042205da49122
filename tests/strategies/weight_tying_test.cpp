// Tied weights under a strategy: GPT's output projection stays its input embedding through
// placement on 8 replicas, training (eager and compiled, like one replica), and a checkpoint saved
// and loaded in the scope. A tie that came apart before placement is made again, or fit fails.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/core/thread_pool.h"
#include "framework/layers/weight_ties.h"
#include "framework/losses/losses.h"
#include "framework/optimizers/optimizers.h"
#include "models/gpt.h"
#include "models/gpt_data.h"
#include "strategies/mirrored_strategy.h"
#include "strategies/tpu_strategy.h"
#include "tests/framework/layers/tied_model_util.h"
#include "tests/models/gpt_test_util.h"
#include "tests/support/error_message.h"
#include "tests/support/log_capture.h"

namespace kestrel::distribute {
namespace {

using testing::contains;
using testing::error_message;
using testing::TiedPair;

// 20 global batches of 8 rows of ids in [1, 32), lengths 3..12 of 12: replicas count different
// numbers of tokens, which their shares of the global mean loss account for.
std::vector<models::CausalLmBatch> text_batches() {
  std::vector<models::CausalLmBatch> out;
  for (int step = 0; step < 20; ++step) {
    const auto lengths = random::randint({8}, random::Key(300 + step), 3, 13).to_vector<std::int64_t>();
    const auto ids = random::randint({8 * 12}, random::Key(400 + step), 1, 32).to_vector<std::int64_t>();
    std::vector<std::vector<std::int64_t>> rows;
    for (int r = 0; r < 8; ++r) {
      rows.emplace_back(ids.begin() + r * 12, ids.begin() + r * 12 + lengths[static_cast<std::size_t>(r)]);
    }
    out.push_back(models::causal_lm_batch(rows, {.length = 12}));
  }
  return out;
}

void compile_gpt(models::GPT& model, bool jit) {
  model.compile({.optimizer = optimizers::AdamW({.learning_rate = 3e-3, .weight_decay = 0.01}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true, .ignore_class = -100}),
                 .jit_compile = jit});
}

bool tied(const models::GPT& model) { return model.output_embeddings().is_same(model.token_embedding().embeddings()); }

// A fresh small GPT (seed 21) trained on the 20 batches under `strategy` (null: no scope); its
// weights, then its evaluated loss on 8 rows of mixed lengths.
std::vector<Tensor> train_gpt(const Strategy* strategy, bool jit) {
  clear_session();
  random::set_global_seed(21);
  std::optional<DistributionScope> scope;
  if (strategy != nullptr) scope.emplace(*strategy);
  models::GPT model(testing::small_gpt());
  compile_gpt(model, jit);
  const std::vector<models::CausalLmBatch> batches = text_batches();
  for (const models::CausalLmBatch& batch : batches) model.train_on_batch(batch.inputs, batch.labels);
  EXPECT_TRUE(tied(model));
  std::vector<Tensor> out = model.get_weights();
  const models::CausalLmBatch both = models::causal_lm_batch({{1, 2, 3},
                                                              {4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14},
                                                              {15, 16},
                                                              {17, 18, 19, 20, 21},
                                                              {22, 23, 24, 25, 26, 27},
                                                              {28, 29},
                                                              {30, 31, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
                                                              {11, 12, 13, 14}},
                                                             {.length = 12});
  out.push_back(Tensor::scalar(model.evaluate(both.inputs, both.labels, {.batch_size = 8, .verbose = 0}).at("loss")));
  return out;
}

TEST(WeightTying, GptStaysTiedThroughPlacementOnEightReplicas) {
  TPUStrategy tpu(TPUClusterResolver::local());
  testing::LogCapture log("kestrel.distribute");
  auto scope = tpu.scope();
  models::GPT model(testing::small_gpt());
  compile_gpt(model, /*jit=*/true);
  const models::CausalLmBatch batch = text_batches()[0];
  model.train_on_batch(batch.inputs, batch.labels);
  EXPECT_TRUE(tied(model));
  const layers::WeightTies ties = layers::find_weight_ties(model);
  ASSERT_EQ(ties.size(), 1u);
  EXPECT_EQ(ties[0].to_string(), "token_embedding/embeddings = lm_head/kernel");
  EXPECT_TRUE(contains(log.text(), "placed on 8 replicas of TPUStrategy")) << log.text();
  EXPECT_TRUE(contains(log.text(), "tied: token_embedding/embeddings = lm_head/kernel")) << log.text();
  EXPECT_FALSE(contains(log.text(), "re-tied")) << log.text();
  // One set of AdamW slots for the tied table: two per trainable variable, plus iterations and rate.
  EXPECT_EQ(model.optimizer()->variables().size(), 2 * model.trainable_weights().size() + 2);
  // The host holds an arena per replica running at once (at most one per thread), not one per replica.
  const JitStats jit = model.jit_stats();
  EXPECT_GT(jit.arena_bytes_per_replica, 0);
  EXPECT_LE(jit.arena_bytes, std::min(8, num_threads()) * jit.arena_bytes_per_replica);
}

TEST(WeightTying, TiedGptOnEightReplicasTrainsLikeOne) {
  TPUStrategy tpu(TPUClusterResolver::local());
  for (const bool jit : {false, true}) {
    SCOPED_TRACE(jit ? "jit" : "eager");
    const std::vector<Tensor> one = train_gpt(nullptr, jit);
    const std::vector<Tensor> eight = train_gpt(&tpu, jit);
    ASSERT_EQ(eight.size(), one.size());
    for (std::size_t i = 0; i < one.size(); ++i) {
      std::vector<float> g = eight[i].to_vector<float>(), w = one[i].to_vector<float>();
      for (std::size_t k = 0; k < w.size(); ++k) {
        ASSERT_NEAR(g[k], w[k], 1e-5 * (1.0 + std::abs(w[k]))) << "weight " << i << " element " << k;
      }
    }
  }
}

TEST(WeightTying, ACheckpointSavedAndLoadedInTheScopeKeepsTheTie) {
  const auto dir = std::filesystem::temp_directory_path() / ("kestrel_tying_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "gpt.weights.h5").string();
  TPUStrategy tpu(TPUClusterResolver::local());
  auto scope = tpu.scope();
  const std::vector<models::CausalLmBatch> batches = text_batches();
  models::GPT trained(testing::small_gpt());
  compile_gpt(trained, /*jit=*/true);
  for (int step = 0; step < 3; ++step) trained.train_on_batch(batches[step].inputs, batches[step].labels);
  trained.save_weights(path);
  const Logs before = trained.evaluate(batches[5].inputs, batches[5].labels, {.batch_size = 8, .verbose = 0});

  models::GPT restored(testing::small_gpt());
  compile_gpt(restored, /*jit=*/true);
  restored.build({1, 12});
  restored.load_weights(path);
  EXPECT_TRUE(tied(restored));
  const Logs after = restored.evaluate(batches[5].inputs, batches[5].labels, {.batch_size = 8, .verbose = 0});
  EXPECT_DOUBLE_EQ(after.at("loss"), before.at("loss"));
  // Training goes on with one variable: a step moves both "layers" together.
  restored.train_on_batch(batches[6].inputs, batches[6].labels);
  EXPECT_TRUE(tied(restored));
  std::filesystem::remove_all(dir);
}

TEST(WeightTying, TieWeightsMakesATieThatCameApartBeforePlacement) {
  MirroredStrategy mirrored({.num_replicas = 2});
  auto scope = mirrored.scope();
  TiedPair model;
  const Tensor x = Tensor::ones({4, 4});
  model(x);
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.1}), .loss = "mse"});
  model.decoder().recreate_kernel();
  testing::LogCapture log("kestrel.distribute");
  model.train_on_batch(x, Tensor::zeros({4, 4}));
  EXPECT_TRUE(model.tied());  // tie_weights() ran at placement
  EXPECT_FALSE(contains(log.text(), "re-tied")) << log.text();
}

TEST(WeightTying, AStrategyReTiesWhatTheModelDoesNot) {
  MirroredStrategy mirrored({.num_replicas = 2});
  auto scope = mirrored.scope();
  TiedPair model(/*tie=*/false);  // tied by hand: its tie_weights() knows nothing of it
  const Tensor x = Tensor::ones({4, 4});
  model(x);
  model.decoder().kernel().tie_to(model.encoder().kernel());
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.1}), .loss = "mse"});  // the ties are recorded
  model.decoder().recreate_kernel();
  testing::LogCapture log("kestrel.distribute");
  model.train_on_batch(x, Tensor::zeros({4, 4}));
  EXPECT_TRUE(model.tied());
  EXPECT_TRUE(contains(log.text(), "re-tied decoder/kernel to encoder/kernel")) << log.text();
}

TEST(WeightTying, ATieThatCannotBeMadeAgainStopsFit) {
  MirroredStrategy mirrored({.num_replicas = 2});
  auto scope = mirrored.scope();
  TiedPair model(/*tie=*/false);
  const Tensor x = Tensor::ones({4, 4});
  model(x);
  model.decoder().kernel().tie_to(model.encoder().kernel());
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.1}), .loss = "mse"});
  model.decoder().recreate_kernel(Shape{4, 5});
  const std::string m = error_message<ValueError>([&] { model.train_on_batch(x, Tensor::zeros({4, 4})); });
  EXPECT_TRUE(contains(m,
                       "the tied weights encoder/kernel = decoder/kernel came apart at placement on 2 replicas of "
                       "MirroredStrategy"))
      << m;
  EXPECT_TRUE(contains(m, "the shapes differ")) << m;
}

}  // namespace
}  // namespace kestrel::distribute
