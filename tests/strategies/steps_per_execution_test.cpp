// steps_per_execution = N: one call of the step function runs N steps (compiled, one program of N
// steps), batch callbacks come every N steps with the exact batch counts, and training ends where
// N = 1 ends: the same weights, logs and callback counts, eager and compiled, on 1 and 8 replicas.
#include <gtest/gtest.h>

#include <optional>

#include "framework/core/random.h"
#include "framework/layers/layers.h"
#include "framework/losses/losses.h"
#include "framework/model/callback.h"
#include "framework/model/sequential.h"
#include "framework/optimizers/optimizers.h"
#include "strategies/tpu_strategy.h"
#include "tests/support/error_message.h"
#include "tests/support/log_capture.h"

namespace kestrel::distribute {
namespace {

using testing::contains;

struct TrainedRun {
  std::vector<Tensor> weights;
  History history;
  std::vector<std::int64_t> batch_ends, test_batch_ends;
  std::int64_t iterations = 0;
  std::int64_t compiles = 0;
  std::vector<float> predicted;
};

// Records the batch numbers the batch-end hooks see.
class BatchEnds : public Callback {
 public:
  explicit BatchEnds(TrainedRun& run) : run_(run) {}
  void on_train_batch_end(std::int64_t batch, const Logs& /*logs*/) override { run_.batch_ends.push_back(batch); }
  void on_test_batch_end(std::int64_t batch, const Logs& /*logs*/) override { run_.test_batch_ends.push_back(batch); }

 private:
  TrainedRun& run_;
};

// A dropout MLP trained 2 epochs over 72 samples at batch 16 (5 steps an epoch, the last of 8
// rows padded), validated on 40 (3 steps), with `per_execution` steps per call.
TrainedRun train_grouped(int per_execution, bool jit, bool eight_replicas) {
  clear_session();
  random::set_global_seed(7);
  std::optional<TPUStrategy> tpu;
  std::optional<DistributionScope> scope;
  if (eight_replicas) {
    tpu.emplace(TPUClusterResolver::local());
    scope.emplace(*tpu);
  }
  Sequential model({layers::Dense(16, {.activation = "relu"}), layers::Dropout(0.2), layers::Dense(3)});
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 1e-2}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"},
                 .jit_compile = jit,
                 .steps_per_execution = per_execution});
  const Tensor x = random::normal({72, 12}, random::Key(1));
  const Tensor y = random::randint({72}, random::Key(2), 0, 3);
  const Tensor x_val = random::normal({40, 12}, random::Key(3));
  const Tensor y_val = random::randint({40}, random::Key(4), 0, 3);
  TrainedRun run;
  Handle<Callback> record(std::shared_ptr<Callback>(std::make_shared<BatchEnds>(run)));
  run.history = model.fit(x, y,
                          {.batch_size = 16,
                           .epochs = 2,
                           .verbose = 0,
                           .callbacks = {record},
                           .validation_data = ValidationData{x_val, y_val},
                           .shuffle = false});
  run.weights = model.get_weights();
  run.iterations = model.optimizer()->iterations();
  run.predicted = model.predict(x_val, {.batch_size = 16}).tensor().to_vector<float>();
  run.compiles = model.jit_stats().compiles;
  return run;
}

class StepsPerExecution : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(StepsPerExecution, EndsWhereOneStepPerCallEnds) {
  const auto [jit, eight] = GetParam();
  const TrainedRun one = train_grouped(1, jit, eight);
  const TrainedRun four = train_grouped(4, jit, eight);
  // 5 steps an epoch: executions of 4 and 1; hooks after steps 3 and 4 of each epoch.
  EXPECT_EQ(four.batch_ends, (std::vector<std::int64_t>{3, 4, 3, 4}));
  EXPECT_EQ(four.test_batch_ends, (std::vector<std::int64_t>{2, 2}));  // 3 validation steps: one execution
  EXPECT_EQ(one.batch_ends.size(), 10u);
  EXPECT_EQ(four.iterations, one.iterations);
  EXPECT_EQ(four.iterations, 10);
  ASSERT_EQ(four.weights.size(), one.weights.size());
  for (std::size_t i = 0; i < one.weights.size(); ++i) {
    const std::vector<float> a = four.weights[i].to_vector<float>(), b = one.weights[i].to_vector<float>();
    for (std::size_t k = 0; k < a.size(); ++k) ASSERT_NEAR(a[k], b[k], 1e-6) << "weight " << i << " element " << k;
  }
  for (const auto& [key, values] : one.history.history) {
    ASSERT_EQ(four.history.history.at(key).size(), values.size()) << key;
    for (std::size_t e = 0; e < values.size(); ++e)
      EXPECT_NEAR(four.history.history.at(key)[e], values[e], 1e-6) << key;
  }
  ASSERT_EQ(four.predicted.size(), one.predicted.size());
  for (std::size_t i = 0; i < one.predicted.size(); ++i) EXPECT_NEAR(four.predicted[i], one.predicted[i], 1e-6);
}

INSTANTIATE_TEST_SUITE_P(EagerAndCompiledOnOneAndEightReplicas, StepsPerExecution,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<bool, bool>>& info) {
                           return std::string(std::get<0>(info.param) ? "compiled" : "eager") +
                                  (std::get<1>(info.param) ? "_8_replicas" : "_1_replica");
                         });

TEST(StepsPerExecutionCompiled, OneProgramRunsTheExecutionsSteps) {
  testing::LogCapture log("kestrel.jit");
  const TrainedRun four = train_grouped(4, /*jit=*/true, /*eight_replicas=*/false);
  const std::string text = log.text();
  // A program of 4 steps (each step's batch its own arguments) and one of the epoch's last step;
  // evaluation's 3 steps, and predict's 3.
  EXPECT_TRUE(contains(text, "compiled 'train_step' #1")) << text;
  EXPECT_TRUE(contains(text, "step3/x: float32[16,12]")) << text;
  EXPECT_TRUE(contains(text, "compiled 'train_step' #2")) << text;
  EXPECT_FALSE(contains(text, "compiled 'train_step' #3")) << text;
  EXPECT_TRUE(contains(text, "step2/x: float32[16,12]")) << text;
  EXPECT_EQ(four.compiles, 4);  // train 4 and 1 steps, test 3, predict 3
}

}  // namespace
}  // namespace kestrel::distribute
