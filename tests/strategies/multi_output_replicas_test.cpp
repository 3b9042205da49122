// A Functional model of several outputs trains on 8 replicas like on one: each output's targets
// are cut into the replicas' shards, each output's loss is scaled by the replica's share, its
// metrics see every replica's rows, and predict joins each output's rows — eagerly and compiled.
#include <gtest/gtest.h>

#include <cmath>

#include "framework/core/random.h"
#include "framework/layers/input_layer.h"
#include "framework/layers/layers.h"
#include "framework/losses/losses.h"
#include "framework/model/model.h"
#include "framework/ops/ops.h"
#include "framework/optimizers/optimizers.h"
#include "strategies/tpu_strategy.h"

namespace kestrel::distribute {
namespace {

struct MultiOutputRun {
  History history;
  Logs evaluated;
  Outputs predicted;
  std::vector<Tensor> weights;
};

// A trunk with a classifying head and a regressing head (seed 5), trained for 2 epochs of 72
// samples at a global batch of 16 (a last batch of 8, padded), then evaluated and run on 40.
MultiOutputRun train_multi_output(const Strategy* strategy, bool jit) {
  clear_session();
  random::set_global_seed(5);
  std::optional<DistributionScope> scope;
  if (strategy != nullptr) scope.emplace(*strategy);
  const Tensor x = Input({6});
  const Tensor h = layers::Dense(16, {.activation = "relu"})(x);
  Model model(x, Outputs{{"digit", layers::Dense(3)(h)}, {"size", layers::Dense(1)(h)}});
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 1e-2}),
                 .loss = {{"digit", losses::SparseCategoricalCrossentropy({.from_logits = true})}, {"size", "mse"}},
                 .loss_weights = {{"digit", 2.0}},
                 .metrics = {{"digit", {"accuracy"}}},
                 .jit_compile = jit});
  const auto data = [](std::int64_t n, std::uint64_t seed) {
    return std::pair{random::normal({n, 6}, random::Key(seed)),
                     Outputs{{"digit", random::randint({n}, random::Key(seed + 1), 0, 3)},
                             {"size", random::normal({n, 1}, random::Key(seed + 2))}}};
  };
  const auto [train_x, train_y] = data(72, 40);
  const auto [test_x, test_y] = data(40, 50);
  MultiOutputRun run;
  run.history = model.fit(train_x, train_y, {.batch_size = 16, .epochs = 2, .verbose = 0, .shuffle = false});
  run.evaluated = model.evaluate(test_x, test_y, {.batch_size = 16, .verbose = 0});
  run.predicted = model.predict(test_x, {.batch_size = 16});
  run.weights = model.get_weights();
  return run;
}

void expect_close(const MultiOutputRun& got, const MultiOutputRun& want) {
  ASSERT_EQ(got.weights.size(), want.weights.size());
  for (std::size_t i = 0; i < want.weights.size(); ++i) {
    const std::vector<float> g = got.weights[i].to_vector<float>(), w = want.weights[i].to_vector<float>();
    for (std::size_t k = 0; k < w.size(); ++k) {
      ASSERT_NEAR(g[k], w[k], 1e-5 * (1.0 + std::abs(w[k]))) << "weight " << i << " element " << k;
    }
  }
  for (const char* key : {"loss", "digit_loss", "size_loss"}) {
    EXPECT_NEAR(got.history.history.at(key).back(), want.history.history.at(key).back(), 1e-5) << key;
    EXPECT_NEAR(got.evaluated.at(key), want.evaluated.at(key), 1e-5) << key;
  }
  EXPECT_DOUBLE_EQ(got.evaluated.at("digit_accuracy"), want.evaluated.at("digit_accuracy"));
  for (const char* output : {"digit", "size"}) {
    ASSERT_EQ(got.predicted[output].shape(), want.predicted[output].shape()) << output;
    EXPECT_LT(ops::max(ops::abs(ops::subtract(got.predicted[output], want.predicted[output]))).item(), 1e-5) << output;
  }
}

TEST(MultiOutputReplicas, EightTrainLikeOneEagerlyAndCompiled) {
  TPUStrategy tpu(TPUClusterResolver::local());
  for (const bool jit : {false, true}) {
    SCOPED_TRACE(jit ? "compiled" : "eager");
    const MultiOutputRun one = train_multi_output(nullptr, jit);
    EXPECT_EQ(one.predicted["size"].shape(), (Shape{40, 1}));
    expect_close(train_multi_output(&tpu, jit), one);
  }
}

}  // namespace
}  // namespace kestrel::distribute
