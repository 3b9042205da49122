// fit / evaluate / predict end to end on problems with known answers.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "framework/callbacks/lambda_callback.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/layers/layers.h"
#include "framework/losses/losses.h"
#include "framework/model/sequential.h"
#include "framework/ops/ops.h"
#include "framework/optimizers/optimizers.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;

class FitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clear_session();
    random::set_global_seed(7);
  }
};

TEST_F(FitTest, LearnsXor) {
  Tensor x = Tensor::from_vector<float>({0, 0, 0, 1, 1, 0, 1, 1}, {4, 2});
  Tensor y = Tensor::from_vector<float>({0, 1, 1, 0}, {4, 1});
  Sequential model({layers::Dense(8, {.activation = "tanh"}), layers::Dense(1, {.activation = "sigmoid"})});
  model.compile(
      {.optimizer = optimizers::Adam({.learning_rate = 0.05}), .loss = "binary_crossentropy", .metrics = {"accuracy"}});
  History h = model.fit(x, y, {.batch_size = 4, .epochs = 300, .verbose = 0});
  EXPECT_LT(h.history.at("loss").back(), 0.1);
  EXPECT_EQ(model.evaluate(x, y, {.verbose = 0}).at("accuracy"), 1.0);
  std::vector<float> p = model.predict(x).tensor().to_vector<float>();
  EXPECT_LT(p[0], 0.5f);
  EXPECT_GT(p[1], 0.5f);
  EXPECT_GT(p[2], 0.5f);
  EXPECT_LT(p[3], 0.5f);
}

TEST_F(FitTest, LinearRegressionRecoversSlopeAndIntercept) {
  Tensor x = random::uniform({256, 1}, random::Key(1), -1.0, 1.0);
  Tensor y = ops::add(ops::multiply(x, ops::scalar_like(x, 3.0)), ops::scalar_like(x, 2.0));
  Sequential model({layers::Dense(1)});
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.1}), .loss = "mse"});
  model.fit(x, y, {.batch_size = 32, .epochs = 60, .verbose = 0});
  std::vector<Tensor> w = model.get_weights();
  EXPECT_NEAR(w[0].item(), 3.0, 1e-2);
  EXPECT_NEAR(w[1].item(), 2.0, 1e-2);
  EXPECT_LT(model.evaluate(x, y, {.verbose = 0}).at("loss"), 1e-4);
}

TEST_F(FitTest, HistoryHasOneEntryPerEpochIncludingValidation) {
  Tensor x = random::normal({64, 3}, random::Key(2));
  Tensor y = ops::sum(x, {.axes = {1}, .keepdims = true});
  Sequential model({layers::Dense(1)});
  model.compile({.optimizer = "sgd", .loss = "mse", .metrics = {"mae"}});
  History h = model.fit(x, y, {.batch_size = 16, .epochs = 3, .verbose = 0, .validation_split = 0.25});
  EXPECT_EQ(h.epoch, (std::vector<int>{0, 1, 2}));
  for (const char* key : {"loss", "mae", "val_loss", "val_mae"}) {  // a metric given by name logs under it
    ASSERT_TRUE(h.history.count(key)) << key;
    EXPECT_EQ(h.history.at(key).size(), 3u) << key;
  }
}

TEST_F(FitTest, InitialEpochAndStepsPerEpochAreHonoured) {
  Tensor x = random::normal({40, 2}, random::Key(3));
  Tensor y = ops::sum(x, {.axes = {1}, .keepdims = true});
  Sequential model({layers::Dense(1)});
  model.compile({.optimizer = "sgd", .loss = "mse"});
  int batches = 0;
  auto counter = std::make_shared<callbacks::LambdaCallback>(
      callbacks::LambdaCallbackOptions{.on_train_batch_end = [&](std::int64_t, const Logs&) { ++batches; }});
  History h = model.fit(
      x, y,
      {.batch_size = 8, .epochs = 4, .verbose = 0, .callbacks = {counter}, .initial_epoch = 2, .steps_per_epoch = 3});
  EXPECT_EQ(h.epoch, (std::vector<int>{2, 3}));
  EXPECT_EQ(batches, 6);
  EXPECT_EQ(model.optimizer()->iterations(), 6);
}

TEST_F(FitTest, ClassWeightScalesTheLoss) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {4, 1});
  Tensor y = Tensor::from_vector<std::int64_t>({0, 1, 0, 1}, {4});
  Sequential model({layers::Dense(2)});
  model.compile({.optimizer = "sgd", .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  model.build({4, 1});
  double plain = model.test_on_batch(x, y).at("loss");
  Tensor doubled = Tensor::full({4}, 2.0);
  EXPECT_NEAR(model.test_on_batch(x, y, doubled).at("loss"), 2 * plain, 1e-5);
}

TEST_F(FitTest, CompileKeepsItsOptions) {
  Sequential model({layers::Dense(1)});
  model.compile({.optimizer = "sgd", .loss = "mse", .jit_compile = true, .steps_per_execution = 4});
  EXPECT_TRUE(model.compile_options().jit_compile);
  EXPECT_EQ(model.compile_options().steps_per_execution, 4);
  EXPECT_EQ(model.optimizer()->name(), "SGD");
  EXPECT_EQ(model.loss()->name(), "mean_squared_error");
}

TEST_F(FitTest, TrainOnBatchTakesOneStep) {
  Tensor x = random::normal({8, 2}, random::Key(4));
  Tensor y = random::normal({8, 1}, random::Key(5));
  Sequential model({layers::Dense(1)});
  model.compile({.optimizer = "adam", .loss = "mse"});
  Logs logs = model.train_on_batch(x, y);
  EXPECT_TRUE(logs.count("loss"));
  EXPECT_EQ(model.optimizer()->iterations(), 1);
}

TEST_F(FitTest, PredictConcatenatesBatchesInOrder) {
  Tensor x = random::normal({10, 3}, random::Key(6));
  Sequential model({layers::Dense(2)});
  Tensor whole = model(x);
  Tensor batched = model.predict(x, {.batch_size = 3});
  EXPECT_EQ(batched.shape(), (Shape{10, 2}));
  std::vector<float> a = whole.to_vector<float>(), b = batched.to_vector<float>();
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6);
}

TEST_F(FitTest, SameSeedGivesTheSameRun) {
  auto run = [] {
    clear_session();
    random::set_global_seed(11);
    Tensor x = random::normal({32, 4}, random::Key(7));
    Tensor y = ops::sum(x, {.axes = {1}, .keepdims = true});
    Sequential model({layers::Dense(4, {.activation = "relu"}), layers::Dropout(0.3), layers::Dense(1)});
    model.compile({.optimizer = "adam", .loss = "mse"});
    return model.fit(x, y, {.batch_size = 8, .epochs = 3, .verbose = 0}).history.at("loss");
  };
  EXPECT_EQ(run(), run());
}

TEST_F(FitTest, VerboseFitShowsKerasProgress) {
  Tensor x = random::normal({20, 2}, random::Key(8));
  Tensor y = ops::sum(x, {.axes = {1}, .keepdims = true});
  Sequential model({layers::Dense(1)});
  model.compile({.optimizer = "sgd", .loss = "mse"});
  ::testing::internal::CaptureStdout();
  model.fit(x, y, {.batch_size = 8, .epochs = 2, .verbose = 1, .validation_split = 0.2});
  model.evaluate(x, y, {.verbose = 1});
  model.predict(x, {.verbose = 1});
  std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_TRUE(contains(out, "Epoch 1/2")) << out;
  EXPECT_TRUE(contains(out, "2/2")) << out;  // 16 training samples in batches of 8
  EXPECT_TRUE(contains(out, "val_loss")) << out;
}

TEST_F(FitTest, FitBeforeCompileSaysToCompile) {
  Sequential model({layers::Dense(1)});
  std::string m = error_message<ValueError>([&] { model.fit(Tensor::zeros({2, 1}), Tensor::zeros({2, 1})); });
  EXPECT_TRUE(contains(m, "compile()")) << m;
}

TEST_F(FitTest, MismatchedSampleCountsNameBothShapes) {
  Sequential model({layers::Dense(1)});
  model.compile({.optimizer = "sgd", .loss = "mse"});
  std::string m = error_message<ShapeError>([&] { model.fit(Tensor::zeros({5, 1}), Tensor::zeros({4, 1})); });
  EXPECT_TRUE(contains(m, "[4,1]")) << m;
  EXPECT_TRUE(contains(m, "5 samples")) << m;
}

TEST_F(FitTest, SummaryListsLayersAndParameterCounts) {
  Sequential model(
      {layers::Dense(512, {.activation = "relu"}), layers::Dense(256, {.activation = "relu"}), layers::Dense(10)});
  model.build({1, 784});
  std::ostringstream out;
  model.summary(out);
  std::string s = out.str();
  EXPECT_TRUE(contains(s, "Model: \"sequential\"")) << s;
  EXPECT_TRUE(contains(s, "dense (Dense)")) << s;
  EXPECT_TRUE(contains(s, "(None, 512)")) << s;
  EXPECT_TRUE(contains(s, "401920")) << s;
  EXPECT_TRUE(contains(s, "Total params: 535,818")) << s;
}

TEST_F(FitTest, SummaryBeforeBuildSaysHowToBuild) {
  Sequential model({layers::Dense(1)});
  std::ostringstream out;
  std::string m = error_message<ValueError>([&] { model.summary(out); });
  EXPECT_TRUE(contains(m, "build(")) << m;
}

}  // namespace
}  // namespace kestrel
