// Gradient accumulation in fit: k micro-batches of b with gradient_accumulation_steps = k train
// like one batch of k * b, eagerly and compiled, on one replica and on eight (the optimizer
// accumulates after the replicas' gradients are summed, as Keras applies it after the all-reduce).
#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "framework/core/random.h"
#include "framework/layers/layers.h"
#include "framework/losses/losses.h"
#include "framework/model/sequential.h"
#include "framework/optimizers/optimizers.h"
#include "strategies/tpu_strategy.h"

namespace kestrel::distribute {
namespace {

struct AccumulationRun {
  std::vector<Tensor> weights;
  std::int64_t iterations = 0;
};

// A fresh MLP (seed 5) trained for 2 epochs over 128 samples at `batch_size`, with Adam
// accumulating over `accumulation` calls (1: none), under `strategy` (null: no scope).
AccumulationRun train_accumulating(const Strategy* strategy, bool jit, std::int64_t batch_size, int accumulation) {
  clear_session();
  random::set_global_seed(5);
  std::optional<DistributionScope> scope;
  if (strategy != nullptr) scope.emplace(*strategy);
  Sequential model({layers::Dense(16, {.activation = "relu"}), layers::Dense(3)});
  std::optional<int> steps;
  if (accumulation > 1) steps = accumulation;
  model.compile({.optimizer = optimizers::Adam(
                     {.learning_rate = 1e-2, .global_clipnorm = 1.0, .gradient_accumulation_steps = steps}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .jit_compile = jit});
  const Tensor x = random::normal({128, 12}, random::Key(40));
  const Tensor y = random::randint({128}, random::Key(41), 0, 3);
  model.fit(x, y, {.batch_size = batch_size, .epochs = 2, .verbose = 0, .shuffle = false});
  return {model.get_weights(), model.optimizer()->iterations()};
}

void expect_close(const AccumulationRun& got, const AccumulationRun& want, const std::string& what) {
  EXPECT_EQ(got.iterations, want.iterations) << what;
  ASSERT_EQ(got.weights.size(), want.weights.size());
  for (std::size_t i = 0; i < want.weights.size(); ++i) {
    std::vector<float> g = got.weights[i].to_vector<float>(), w = want.weights[i].to_vector<float>();
    for (std::size_t k = 0; k < w.size(); ++k) {
      ASSERT_NEAR(g[k], w[k], 1e-5 * (1.0 + std::abs(w[k]))) << what << ": weight " << i << " element " << k;
    }
  }
}

TEST(GradientAccumulation, FourMicroBatchesOfEightTrainLikeOneBatchOf32) {
  TPUStrategy tpu(TPUClusterResolver::local());
  for (const Strategy* strategy : {static_cast<const Strategy*>(nullptr), static_cast<const Strategy*>(&tpu)}) {
    for (const bool jit : {false, true}) {
      const std::string what = std::string(strategy ? "8 replicas" : "1 replica") + (jit ? ", compiled" : ", eager");
      const AccumulationRun whole = train_accumulating(strategy, jit, 32, 1);
      const AccumulationRun accumulated = train_accumulating(strategy, jit, 8, 4);
      EXPECT_EQ(whole.iterations, 8) << what;  // 2 epochs of 4 batches of 32
      expect_close(accumulated, whole, what);
    }
  }
}

}  // namespace
}  // namespace kestrel::distribute
