// Mean and MeanMetricWrapper: Keras's weighted running mean, its state and reset.
#include "framework/metrics/mean.h"

#include <gtest/gtest.h>

#include <vector>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/error.h"
#include "framework/ops/ops.h"
#include "tests/support/error_message.h"
#include "tests/support/tensor_values.h"

namespace kestrel::metrics {
namespace {

using testing::contains;
using testing::error_message;
using testing::floats;
using testing::kTol;

TEST(Mean, UnweightedRunningMean) {
  Mean mean;
  EXPECT_EQ(mean.name(), "mean");
  EXPECT_EQ(mean.result(), 0.0);  // nothing counted yet
  mean.add_values(floats({1, 3, 5, 7}, {4}));
  EXPECT_NEAR(mean.result(), 4.0, kTol);
  mean.add_values(floats({10}, {1}));
  EXPECT_NEAR(mean.result(), 26.0 / 5, kTol);  // (1 + 3 + 5 + 7 + 10) / 5
}

TEST(Mean, WeightedRunningMean) {
  // Keras's docstring: values [1, 3, 5, 7] weighted [1, 1, 0, 0] -> (1 + 3) / 2.
  Mean mean;
  mean.add_values(floats({1, 3, 5, 7}, {4}), floats({1, 1, 0, 0}, {4}));
  EXPECT_NEAR(mean.result(), 2.0, kTol);
  // Then 4 weighted 2: (1 + 3 + 8) / (2 + 2).
  mean.add_values(floats({4}, {1}), floats({2}, {1}));
  EXPECT_NEAR(mean.result(), 3.0, kTol);
}

TEST(Mean, ScalarValueWithABatchSizeWeightTracksALoss) {
  // As a loss tracker: batch losses 2.0 over 64 samples and 5.0 over 32 -> (128 + 160) / 96.
  Mean tracker({.name = "loss"});
  tracker.add_values(Tensor::scalar(2.0), Tensor::scalar(64));
  tracker.add_values(Tensor::scalar(5.0), Tensor::scalar(32));
  EXPECT_NEAR(tracker.result(), 3.0, kTol);
  // Through the Metric interface, y_pred is the value.
  Metric& as_metric = tracker;
  as_metric.update_state(Tensor(), Tensor::scalar(3.0), Tensor::scalar(96));
  EXPECT_NEAR(tracker.result(), 3.0, kTol);
}

TEST(Mean, EachSampleIsAveragedOverItsOtherAxesFirst) {
  // Samples [1, 3] and [5, 5, 5]-like rows: row means 2 and 5, one count each.
  Mean mean;
  mean.add_values(floats({1, 3, 5, 5}, {2, 2}));
  EXPECT_NEAR(mean.result(), 3.5, kTol);
  // Weights [batch] against values [batch, 2]: row means weighted, (2 * 1 + 5 * 3) / 4.
  Mean weighted;
  weighted.add_values(floats({1, 3, 5, 5}, {2, 2}), floats({1, 3}, {2}));
  EXPECT_NEAR(weighted.result(), 17.0 / 4, kTol);
}

TEST(Mean, ResetAndVariables) {
  Mean mean({.name = "val_loss"});
  mean.add_values(floats({2, 4}, {2}));
  std::vector<Variable> vars = mean.variables();
  ASSERT_EQ(vars.size(), 2u);
  EXPECT_EQ(vars[0].name(), "val_loss/total");
  EXPECT_EQ(vars[1].name(), "val_loss/count");
  for (const Variable& v : vars) {
    EXPECT_FALSE(v.trainable());
    EXPECT_EQ(v.dtype(), DType::float32);
    EXPECT_EQ(v.shape(), Shape{});
  }
  EXPECT_NEAR(vars[0].value().item(), 6.0, kTol);
  EXPECT_NEAR(vars[1].value().item(), 2.0, kTol);
  mean.reset_state();
  EXPECT_EQ(mean.result(), 0.0);
  EXPECT_EQ(vars[1].value().item(), 0.0);  // the handles see the reset
  mean.add_values(floats({7}, {1}));
  EXPECT_NEAR(mean.result(), 7.0, kTol);
}

TEST(Mean, SampleWeightMismatchNamesTheMetricAndShapes) {
  Mean mean({.name = "tracker"});
  std::string m = error_message<ShapeError>([&] { mean.add_values(floats({1, 2, 3}, {3}), floats({1, 2}, {2})); });
  EXPECT_TRUE(contains(m, "[tracker]")) << m;
  EXPECT_TRUE(contains(m, "sample_weight is [2]")) << m;
  EXPECT_TRUE(contains(m, "[3]")) << m;
}

TEST(MeanMetricWrapper, AveragesAFunctionOfTargetsAndPredictions) {
  MeanMetricWrapper within_one(
      [](const Tensor& t, const Tensor& p) {
        return ops::cast(ops::less_equal(ops::abs(t - p), ops::scalar_like(p, 1.0)), DType::float32);
      },
      "within_one");
  EXPECT_EQ(within_one.name(), "within_one");
  within_one.update_state(floats({1, 2, 3, 4}, {4}), floats({1.5f, 4, 3, 9}, {4}));        // 1, 0, 1, 0
  within_one.update_state(floats({0, 0}, {2}), floats({0, 0}, {2}), floats({3, 1}, {2}));  // 1, 1 weighted 3, 1
  EXPECT_NEAR(within_one.result(), 6.0 / 8, kTol);
}

TEST(MeanMetricWrapper, StateUpdatesAreNotRecordedOnATape) {
  MeanMetricWrapper m([](const Tensor& t, const Tensor& p) { return p * 2.0; }, "doubled");
  Tensor x = floats({1, 2}, {2});
  GradientTape tape;
  tape.watch(x);
  Tensor y = x * 3.0;
  m.update_state(Tensor::zeros({2}), y);
  EXPECT_FALSE(m.variables()[0].value().requires_grad());
  EXPECT_EQ(m.variables()[0].value().grad_record(), nullptr);
  EXPECT_NEAR(m.result(), 9.0, kTol);  // mean of [6, 12]
}

}  // namespace
}  // namespace kestrel::metrics
