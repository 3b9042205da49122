// Training under precision policies: mixed_bfloat16 and bfloat16 fit, evaluate and predict eagerly
// and compiled, on one replica and on 8, within bfloat16's tolerance of each other, and every run
// repeats its bits.
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

using mixed_precision::PolicyScope;

struct PolicyRun {
  std::vector<Tensor> weights;
  std::vector<Variable> optimizer_variables;
  History history;
  Logs evaluated;
  Tensor predicted;
};

// Three classes that a line through the 12 features separates (seeded).
struct PolicyData {
  Tensor x, y;
};
PolicyData policy_data(std::int64_t n, std::uint64_t seed) {
  const Tensor x = random::normal({n, 12}, random::Key(seed));
  const std::vector<float> v = x.to_vector<float>();
  std::vector<std::int32_t> labels(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const float s = v[static_cast<std::size_t>(i * 12)] + 0.5f * v[static_cast<std::size_t>(i * 12 + 1)];
    labels[static_cast<std::size_t>(i)] = s < -0.4f ? 0 : (s < 0.4f ? 1 : 2);
  }
  return {x, Tensor::from_vector<std::int32_t>(labels, {n})};
}

// A fresh MLP (seed 5) under `policy`, trained for `epochs` epochs of 320 samples at a global batch
// of 32 under `strategy` (null: no scope), then evaluated and run on 96 held-out samples. Two
// epochs (20 steps) compare runs step for step; ten learn the task.
constexpr int kShort = 2;
constexpr int kLong = 10;
PolicyRun train_under_policy(const char* policy, const Strategy* strategy, bool jit, int epochs = kShort) {
  PolicyScope scoped(policy);
  clear_session();
  random::set_global_seed(5);
  std::optional<DistributionScope> scope;
  if (strategy != nullptr) scope.emplace(*strategy);
  Sequential model({layers::Dense(32, {.activation = "relu"}), layers::Dense(3)});
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 1e-2}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"},
                 .jit_compile = jit});
  const PolicyData data = policy_data(320, 40);
  PolicyRun run;
  run.history = model.fit(data.x, data.y, {.batch_size = 32, .epochs = epochs, .verbose = 0, .shuffle = false});
  run.weights = model.get_weights();
  run.optimizer_variables = model.optimizer()->variables();
  const PolicyData test = policy_data(96, 41);
  run.evaluated = model.evaluate(test.x, test.y, {.batch_size = 32, .verbose = 0});
  run.predicted = model.predict(test.x, {.batch_size = 32});
  return run;
}

double max_relative_difference(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - y[i]) / (1.0 + std::abs(y[i])));
  return worst;
}

// bfloat16 keeps 8 significant bits: one rounding is 2^-9 relative, and 20 steps of training let
// such differences grow; what matters is that the runs agree on what they learned.
void expect_within_bfloat16(const PolicyRun& got, const PolicyRun& want) {
  ASSERT_EQ(got.weights.size(), want.weights.size());
  for (std::size_t i = 0; i < want.weights.size(); ++i) {
    EXPECT_LT(max_relative_difference(got.weights[i], want.weights[i]), 0.06) << "weight " << i;
  }
  EXPECT_NEAR(got.history.history.at("loss").back(), want.history.history.at("loss").back(), 0.03);
  EXPECT_NEAR(got.evaluated.at("accuracy"), want.evaluated.at("accuracy"), 3.0 / 96);
  EXPECT_LT(max_relative_difference(got.predicted, want.predicted), 0.1);
}

void expect_same_bits(const PolicyRun& a, const PolicyRun& b) {
  for (std::size_t i = 0; i < a.weights.size(); ++i) {
    EXPECT_EQ(a.weights[i].to_vector<float>(), b.weights[i].to_vector<float>()) << "weight " << i;
  }
  EXPECT_EQ(a.history.history.at("loss"), b.history.history.at("loss"));
  EXPECT_EQ(a.predicted.to_vector<float>(), b.predicted.to_vector<float>());
}

TEST(MixedPrecision, MixedBfloat16TrainsEagerlyAndCompiledAlike) {
  const PolicyRun eager = train_under_policy("mixed_bfloat16", nullptr, false);
  const PolicyRun jit = train_under_policy("mixed_bfloat16", nullptr, true);
  for (const Tensor& w : eager.weights) EXPECT_EQ(w.dtype(), DType::float32);
  EXPECT_EQ(eager.predicted.dtype(), DType::float32);
  expect_within_bfloat16(jit, eager);
  expect_same_bits(train_under_policy("mixed_bfloat16", nullptr, false), eager);
  expect_same_bits(train_under_policy("mixed_bfloat16", nullptr, true), jit);
}

TEST(MixedPrecision, MixedBfloat16LearnsWhatFloat32Learns) {
  const PolicyRun f32 = train_under_policy("float32", nullptr, true, kLong);
  const PolicyRun mixed = train_under_policy("mixed_bfloat16", nullptr, true, kLong);
  EXPECT_GT(f32.evaluated.at("accuracy"), 0.85);
  EXPECT_NEAR(mixed.evaluated.at("accuracy"), f32.evaluated.at("accuracy"), 3.0 / 96);
  EXPECT_NEAR(mixed.history.history.at("loss").back(), f32.history.history.at("loss").back(), 0.05);
}

TEST(MixedPrecision, EightReplicasTrainLikeOneWithinBfloat16) {
  TPUStrategy tpu(TPUClusterResolver::local());
  for (bool jit : {false, true}) {
    SCOPED_TRACE(jit ? "compiled" : "eager");
    const PolicyRun one = train_under_policy("mixed_bfloat16", nullptr, jit);
    const PolicyRun eight = train_under_policy("mixed_bfloat16", &tpu, jit);
    expect_within_bfloat16(eight, one);
    expect_same_bits(train_under_policy("mixed_bfloat16", &tpu, jit), eight);
  }
}

TEST(MixedPrecision, Bfloat16PolicyKeepsWeightsAndOptimizerStateInBfloat16) {
  for (bool jit : {false, true}) {
    SCOPED_TRACE(jit ? "compiled" : "eager");
    const PolicyRun bf16 = train_under_policy("bfloat16", nullptr, jit, kLong);
    for (const Tensor& w : bf16.weights) EXPECT_EQ(w.dtype(), DType::bfloat16);
    for (const Variable& v : bf16.optimizer_variables) {
      if (v.shape().rank() > 0) {  // slots, not counters
        EXPECT_EQ(v.dtype(), DType::bfloat16) << v.name();
      }
    }
    EXPECT_EQ(bf16.predicted.dtype(), DType::bfloat16);
    // The loss and the metrics are float32 whatever the model computes in (logged as doubles).
    EXPECT_TRUE(std::isfinite(bf16.history.history.at("loss").back()));
    EXPECT_GT(bf16.evaluated.at("accuracy"), 0.85);
    expect_same_bits(train_under_policy("bfloat16", nullptr, jit, kLong), bf16);
  }
}

}  // namespace
}  // namespace kestrel::distribute
