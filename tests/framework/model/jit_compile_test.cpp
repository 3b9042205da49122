// compile({.jit_compile = true}): the compiled train, test and predict steps give what eager
// execution gives, compile once per input shape, pad partial batches, and report their cost.
#include <gtest/gtest.h>

#include <cmath>

#include "framework/callbacks/lambda_callback.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/layers/layers.h"
#include "framework/losses/losses.h"
#include "framework/model/sequential.h"
#include "framework/ops/ops.h"
#include "framework/optimizers/optimizers.h"
#include "tests/support/error_message.h"
#include "tests/support/log_capture.h"
#include "tests/support/step_allocations.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;
using testing::LogCapture;

Sequential make_mlp() {
  return Sequential({layers::Dense(32, {.activation = "relu"}), layers::Dropout(0.2),
                     layers::Dense(16, {.activation = "gelu"}), layers::Dense(4)});
}

Sequential make_cnn() {
  return Sequential(
      {layers::Conv2D(4, {3, 3}, {.activation = "relu"}), layers::MaxPooling2D(), layers::Flatten(), layers::Dense(4)});
}

CompileOptions classifier_options(bool jit) {
  return {.optimizer = optimizers::Adam({.learning_rate = 1e-2}),
          .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
          .metrics = {"accuracy"},
          .jit_compile = jit};
}

// The relative difference, with a floor so values near zero compare absolutely.
double relative(double a, double b) { return std::abs(a - b) / std::max(1e-3, std::abs(b)); }

// Trains two copies of a model (same seed) on the same 20 batches, eagerly and compiled, and
// checks the losses step by step and the final weights.
template <class MakeModel>
void expect_jit_matches_eager(MakeModel make, const Shape& sample_shape) {
  std::vector<std::int64_t> dims = {16};
  for (int d = 0; d < sample_shape.rank(); ++d) dims.push_back(sample_shape[d]);
  std::vector<double> losses[2];
  std::vector<Tensor> weights[2];
  for (const bool jit : {false, true}) {
    clear_session();
    random::set_global_seed(3);
    Sequential model = make();
    model.compile(classifier_options(jit));
    for (int step = 0; step < 20; ++step) {
      const Tensor x = random::normal(Shape(dims), random::Key(100 + step));
      const Tensor y = random::randint({16}, random::Key(200 + step), 0, 4);
      losses[jit].push_back(model.train_on_batch(x, y).at("loss"));
    }
    weights[jit] = model.get_weights();
    EXPECT_EQ(model.jit_stats().compiles, jit ? 1 : 0);
  }
  for (int step = 0; step < 20; ++step) {
    EXPECT_LT(relative(losses[1][step], losses[0][step]), 1e-5) << "step " << step;
  }
  ASSERT_EQ(weights[0].size(), weights[1].size());
  for (std::size_t i = 0; i < weights[0].size(); ++i) {
    std::vector<float> eager = weights[0][i].to_vector<float>(), compiled = weights[1][i].to_vector<float>();
    for (std::size_t k = 0; k < eager.size(); ++k) ASSERT_NEAR(compiled[k], eager[k], 1e-4) << "weight " << i;
  }
}

TEST(JitCompile, MlpWithDropoutMatchesEagerOver20Steps) { expect_jit_matches_eager(make_mlp, {10}); }

TEST(JitCompile, CnnMatchesEagerOver20Steps) { expect_jit_matches_eager(make_cnn, {8, 8, 1}); }

// A dataset of `n` samples with 10 features and 4 classes.
struct ClassificationData {
  Tensor x, y;
};
ClassificationData classification_data(std::int64_t n, std::uint64_t seed) {
  return {random::normal({n, 10}, random::Key(seed)), random::randint({n}, random::Key(seed + 1), 0, 4)};
}

TEST(JitCompile, PartialBatchNeitherCompilesAgainNorLosesSamples) {
  const ClassificationData data = classification_data(100, 5);  // batches of 32: 32, 32, 32 and 4
  Logs logs[2];
  Tensor predictions[2];
  for (const bool jit : {false, true}) {
    clear_session();
    random::set_global_seed(3);
    Sequential model({layers::Dense(16, {.activation = "relu"}), layers::Dense(4)});
    model.compile(classifier_options(jit));
    History h = model.fit(data.x, data.y, {.batch_size = 32, .epochs = 2, .verbose = 0, .shuffle = false});
    EXPECT_EQ(h.jit.compiles, jit ? 1 : 0) << "the 4-row batch is padded to 32, not compiled";
    logs[jit] = model.evaluate(data.x, data.y, {.batch_size = 32, .verbose = 0});
    predictions[jit] = model.predict(data.x, {.batch_size = 32});
    EXPECT_EQ(model.jit_stats().compiles, jit ? 3 : 0);  // train, test, predict: one each
  }
  EXPECT_LT(relative(logs[1].at("loss"), logs[0].at("loss")), 1e-5);
  EXPECT_DOUBLE_EQ(logs[1].at("accuracy"), logs[0].at("accuracy"));
  ASSERT_EQ(predictions[1].shape(), Shape({100, 4}));
  std::vector<float> eager = predictions[0].to_vector<float>(), compiled = predictions[1].to_vector<float>();
  for (std::size_t i = 0; i < eager.size(); ++i) ASSERT_NEAR(compiled[i], eager[i], 1e-4);
}

TEST(JitCompile, PaddingRowsLeaveMaskedLossesAndWeightsExact) {
  // ignore_class masks elements inside the loss and sample weights weigh rows: with padding rows
  // in the batch, the compiled step must still give the real rows' loss.
  clear_session();
  const ClassificationData data = classification_data(20, 8);
  const Tensor y = ops::where(ops::equal(data.y, ops::scalar_like(data.y, 3)), ops::scalar_like(data.y, -1), data.y);
  Tensor w = random::uniform({20}, random::Key(9), 0.5, 2.0);
  Logs logs[2];
  for (const bool jit : {false, true}) {
    random::set_global_seed(3);
    Sequential model({layers::Dense(4)});
    CompileOptions options = classifier_options(jit);
    options.loss = losses::SparseCategoricalCrossentropy({.from_logits = true, .ignore_class = -1});
    model.compile(options);
    // Batches of 12 and 8 rows; compiled, the second is padded to 12.
    logs[jit] = model.evaluate(data.x, y, {.batch_size = 12, .verbose = 0, .sample_weight = w});
  }
  EXPECT_LT(relative(logs[1].at("loss"), logs[0].at("loss")), 1e-5);
}

// Token ids of any length -> mean of their embeddings -> 4 class scores.
class MeanEmbedding : public Model {
 public:
  MeanEmbedding() : embedding_(add<layers::Embedding>(50, 8)), dense_(add<layers::Dense>(4)) {}
  Tensor call(const Inputs& x, bool training) override {
    return dense_(ops::mean(embedding_(x, training), {.axes = {1}}), training);
  }

 private:
  layers::Embedding& embedding_;
  layers::Dense& dense_;
};

TEST(JitCompile, CompilesOncePerInputShape) {
  clear_session();
  random::set_global_seed(3);
  MeanEmbedding model;
  model.compile(classifier_options(true));
  LogCapture log("kestrel.jit");
  for (const std::int64_t length : {16, 16, 32, 16, 32, 48}) {
    model.train_on_batch(random::randint({8, length}, random::Key(length), 0, 50),
                         random::randint({8}, random::Key(1), 0, 4));
  }
  EXPECT_EQ(model.jit_stats().compiles, 3);
  // Three programs, one arena: as large as the longest sequence's plan.
  EXPECT_GT(model.jit_stats().arena_bytes, 0);
  const std::string text = log.text();
  EXPECT_TRUE(contains(text, "compiled 'train_step' #2")) << text;
  EXPECT_TRUE(contains(text, "x: int64[8,32]")) << text;
  EXPECT_TRUE(contains(text, "cached: ")) << text;
  EXPECT_GT(model.jit_stats().compile_seconds, 0.0);
}

TEST(JitCompile, ACompileStormWarnsWithTheFix) {
  clear_session();
  random::set_global_seed(3);
  MeanEmbedding model;
  model.compile(classifier_options(true));
  LogCapture log("kestrel.jit");
  for (std::int64_t length = 3; length < 9; ++length) {
    model.train_on_batch(random::randint({4, length}, random::Key(length), 0, 50),
                         random::randint({4}, random::Key(1), 0, 4));
  }
  const std::string text = log.text();
  EXPECT_TRUE(contains(text, "compiled 5 times in its last 5 calls")) << text;
  EXPECT_TRUE(contains(text, "pad_to_multiple_of = 32")) << text;
}

TEST(JitCompile, HostReadInCallIsARuleOneErrorAndRunsEagerly) {
  class Thresholded : public Model {
   public:
    Thresholded() : dense_(add<layers::Dense>(4)) {}
    Tensor call(const Inputs& x, bool training) override {
      Tensor y = dense_(x, training);
      // ClassificationData-dependent control flow: fine eagerly, impossible in a compiled step.
      return ops::sum(y).item() > 0 ? y : ops::negative(y);
    }

   private:
    layers::Dense& dense_;
  };
  clear_session();
  const ClassificationData data = classification_data(8, 1);
  Thresholded eager;
  eager.compile(classifier_options(false));
  EXPECT_NO_THROW(eager.train_on_batch(data.x, data.y));

  Thresholded compiled;
  compiled.compile(classifier_options(true));
  const std::string m = error_message<JitError>([&] { compiled.train_on_batch(data.x, data.y); });
  EXPECT_TRUE(contains(m, "rule 1")) << m;
  EXPECT_TRUE(contains(m, "where")) << m;
  // The failed trace leaves the model's weights as they were: real values.
  EXPECT_FALSE(compiled.weights()[0].value().is_symbolic());
  EXPECT_NO_THROW(compiled.get_weights()[0].to_vector<float>());
}

TEST(JitCompile, StepsPerExecutionRunsStepsBetweenCallbackHooks) {
  clear_session();
  random::set_global_seed(3);
  const ClassificationData data = classification_data(80, 2);
  Sequential model({layers::Dense(4)});
  CompileOptions options = classifier_options(true);
  options.steps_per_execution = 4;
  model.compile(options);
  std::vector<std::int64_t> ends;
  callbacks::LambdaCallback record({.on_train_batch_end = [&](std::int64_t b, const Logs&) { ends.push_back(b); }});
  model.fit(data.x, data.y, {.batch_size = 8, .epochs = 1, .verbose = 0, .callbacks = {record}});
  EXPECT_EQ(ends, (std::vector<std::int64_t>{3, 7, 9}));  // 10 steps: executions of 4, 4 and 2
  EXPECT_EQ(model.optimizer()->iterations(), 10);
}

TEST(JitCompile, ProgressLineShowsCompiles) {
  clear_session();
  const ClassificationData data = classification_data(32, 2);
  Sequential model({layers::Dense(4)});
  model.compile(classifier_options(true));
  ::testing::internal::CaptureStdout();
  model.fit(data.x, data.y, {.batch_size = 16, .verbose = 2});
  const std::string printed = ::testing::internal::GetCapturedStdout();
  EXPECT_TRUE(contains(printed, " - compiles: 1 (")) << printed;
}

TEST(JitCompile, SteadyStateTrainStepAllocatesNothing) {
  clear_session();
  random::set_global_seed(3);
  const ClassificationData data = classification_data(320, 4);
  Sequential model({layers::Dense(64, {.activation = "relu"}), layers::Dropout(0.1), layers::Dense(4)});
  model.compile(classifier_options(true));
  testing::StepAllocations steps;
  model.fit(data.x, data.y, {.batch_size = 32, .epochs = 1, .verbose = 0, .callbacks = {steps.callback()}});
  const std::vector<std::int64_t>& allocations = steps.per_step();
  ASSERT_EQ(allocations.size(), 10u);
  EXPECT_GT(allocations[0], 0) << "the first step compiles";
  for (std::size_t step = 2; step < allocations.size(); ++step) EXPECT_EQ(allocations[step], 0) << "step " << step;
}

}  // namespace
}  // namespace kestrel
