// Replicas train like one: fit under a strategy of 8 replicas, at a global batch B, ends with the
// weights one replica reaches at batch B — eagerly and compiled — and every run gives the same
// bits. Also: partial and uneven batches, metrics over all replicas, and the strategy API.
#include <gtest/gtest.h>

#include <cmath>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/layers/layers.h"
#include "framework/losses/losses.h"
#include "framework/model/sequential.h"
#include "framework/optimizers/optimizers.h"
#include "strategies/mirrored_strategy.h"
#include "strategies/tpu_strategy.h"
#include "tests/support/error_message.h"

namespace kestrel::distribute {
namespace {

using testing::contains;
using testing::error_message;

// The MLP's 12 features, or the CNN's 6x6 single-channel images.
enum class Net { mlp, cnn };

struct MlpData {
  Tensor x, y;
};
MlpData mlp_data(std::int64_t n, Net net = Net::mlp) {
  const Shape features = net == Net::mlp ? Shape{n, 12} : Shape{n, 6, 6, 1};
  return {random::normal(features, random::Key(40)), random::randint({n}, random::Key(41), 0, 3)};
}

Sequential make(Net net) {
  if (net == Net::mlp) return Sequential({layers::Dense(16, {.activation = "relu"}), layers::Dense(3)});
  return Sequential(
      {layers::Conv2D(4, {3, 3}, {.activation = "relu"}), layers::MaxPooling2D(), layers::Flatten(), layers::Dense(3)});
}

struct MlpRun {
  std::vector<Tensor> weights;
  History history;
  Logs evaluated;
  Tensor predicted;
};

// A fresh MLP or CNN (seed 5) trained for 20 steps of a global batch of 16 (2 epochs of 160
// samples) under `strategy` (null: no scope), then evaluated and run on 40 samples.
MlpRun train_mlp(const Strategy* strategy, bool jit, Net net = Net::mlp) {
  clear_session();
  random::set_global_seed(5);
  std::optional<DistributionScope> scope;
  if (strategy != nullptr) scope.emplace(*strategy);
  Sequential model = make(net);
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 1e-2}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"},
                 .jit_compile = jit});
  const MlpData data = mlp_data(160, net);
  MlpRun run;
  run.history = model.fit(data.x, data.y, {.batch_size = 16, .epochs = 2, .verbose = 0, .shuffle = false});
  run.weights = model.get_weights();
  const MlpData test = mlp_data(40, net);
  run.evaluated = model.evaluate(test.x, test.y, {.batch_size = 16, .verbose = 0});  // 16, 16 and 8 (padded)
  run.predicted = model.predict(test.x, {.batch_size = 16});
  return run;
}

void expect_close(const MlpRun& got, const MlpRun& want, double tolerance) {
  ASSERT_EQ(got.weights.size(), want.weights.size());
  for (std::size_t i = 0; i < want.weights.size(); ++i) {
    std::vector<float> g = got.weights[i].to_vector<float>(), w = want.weights[i].to_vector<float>();
    for (std::size_t k = 0; k < w.size(); ++k) {
      ASSERT_NEAR(g[k], w[k], tolerance * (1.0 + std::abs(w[k]))) << "weight " << i << " element " << k;
    }
  }
  EXPECT_NEAR(got.history.history.at("loss").back(), want.history.history.at("loss").back(), 1e-5);
  EXPECT_NEAR(got.evaluated.at("loss"), want.evaluated.at("loss"), 1e-5);
  EXPECT_DOUBLE_EQ(got.evaluated.at("accuracy"), want.evaluated.at("accuracy"));
  ASSERT_EQ(got.predicted.shape(), want.predicted.shape());
}

TEST(Replicas, EightTrainLikeOneEagerly) {
  const MlpRun one = train_mlp(nullptr, false);
  TPUStrategy tpu(TPUClusterResolver::local());
  const MlpRun eight = train_mlp(&tpu, false);
  expect_close(eight, one, 1e-5);
}

TEST(Replicas, EightTrainLikeOneCompiled) {
  const MlpRun one = train_mlp(nullptr, true);
  TPUStrategy tpu(TPUClusterResolver::local());
  const MlpRun eight = train_mlp(&tpu, true);
  expect_close(eight, one, 1e-5);
}

TEST(Replicas, EightTrainLikeOneWithConvolutionsEagerlyAndCompiled) {
  TPUStrategy tpu(TPUClusterResolver::local());
  for (const bool jit : {false, true}) {
    SCOPED_TRACE(jit ? "compiled" : "eager");
    expect_close(train_mlp(&tpu, jit, Net::cnn), train_mlp(nullptr, jit, Net::cnn), 1e-5);
  }
  expect_close(train_mlp(&tpu, true, Net::cnn), train_mlp(nullptr, false, Net::cnn), 1e-5);  // compiled 8 == eager 1
}

TEST(Replicas, RunsAreBitwiseReproducible) {
  MirroredStrategy four({.num_replicas = 4});
  for (const bool jit : {false, true}) {
    const MlpRun first = train_mlp(&four, jit), second = train_mlp(&four, jit);
    for (std::size_t i = 0; i < first.weights.size(); ++i) {
      EXPECT_EQ(first.weights[i].to_vector<float>(), second.weights[i].to_vector<float>()) << "jit " << jit;
    }
  }
}

TEST(Replicas, AGlobalBatchThatDoesNotDivideIsRefused) {
  clear_session();
  TPUStrategy tpu(TPUClusterResolver::local());
  auto scope = tpu.scope();
  Sequential model({layers::Dense(3)});
  model.compile({.optimizer = "sgd", .loss = "mse"});
  const std::string m = error_message<ValueError>([&] {
    model.fit(Tensor::zeros({20, 4}), Tensor::zeros({20, 3}), {.batch_size = 10, .verbose = 0});
  });
  EXPECT_TRUE(contains(m, "fit (TPUStrategy): a global batch of 10 rows does not divide by the 8 replicas")) << m;
}

TEST(Replicas, CompiledReplicasCompileOncePerShape) {
  clear_session();
  TPUStrategy tpu(TPUClusterResolver::local());
  auto scope = tpu.scope();
  Sequential model({layers::Dense(3)});
  model.compile({.optimizer = "sgd", .loss = "mse", .jit_compile = true});
  model.fit(Tensor::zeros({40, 4}), Tensor::zeros({40, 3}), {.batch_size = 16, .epochs = 2, .verbose = 0});
  EXPECT_EQ(model.jit_stats().compiles, 1);  // 16, 16, and 8 padded to 16: one program on 8 replicas
}

TEST(Replicas, AProgramLargerThanACoreFailsAtCompileWithTheFigures) {
  clear_session();
  TPUStrategy tpu(TPUClusterResolver::local({.num_cores = 8, .memory_per_core = 256 << 10}));  // 256 KiB cores
  auto scope = tpu.scope();
  Sequential model({layers::Dense(256, {.activation = "relu"}), layers::Dense(3)});
  model.compile({.optimizer = "adam", .loss = "mse", .jit_compile = true});
  const std::string m = error_message<ResourceExhaustedError>([&] {
    model.fit(Tensor::zeros({64, 128}), Tensor::zeros({64, 3}), {.batch_size = 64, .verbose = 0});
  });
  EXPECT_TRUE(contains(m, "ResourceExhausted: 'train_step'")) << m;
  EXPECT_TRUE(contains(m, "per replica (state ")) << m;
  EXPECT_TRUE(contains(m, "a TPUStrategy replica has 256.0 KiB")) << m;
  EXPECT_TRUE(contains(m, "smaller global batch")) << m;
}

}  // namespace
}  // namespace kestrel::distribute
