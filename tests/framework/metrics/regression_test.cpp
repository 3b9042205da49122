// MeanSquaredError and MeanAbsoluteError metrics: running means of the per-sample errors.
#include "framework/metrics/regression.h"

#include <gtest/gtest.h>

#include <vector>

#include "framework/core/error.h"
#include "tests/support/error_message.h"
#include "tests/support/tensor_values.h"

namespace kestrel::metrics {
namespace {

using testing::contains;
using testing::error_message;
using testing::floats;
using testing::kTol;

TEST(MeanSquaredErrorMetric, RunningMeanOfPerSampleErrors) {
  // Keras's docstring: [[0, 1], [0, 0]] vs [[1, 1], [0, 0]] -> per-sample [0.5, 0] -> 0.25;
  // weighted [1, 0] -> 0.5.
  Tensor y_true = floats({0, 1, 0, 0}, {2, 2});
  Tensor y_pred = floats({1, 1, 0, 0}, {2, 2});
  MeanSquaredError mse;
  EXPECT_EQ(mse.name(), "mean_squared_error");
  mse.update_state(y_true, y_pred);
  EXPECT_NEAR(mse.result(), 0.25, kTol);
  // A second batch, per-sample [(3 - 1)^2 / 2 + 0] = [2]: (0.5 + 0 + 2) / 3.
  mse.update_state(floats({3, 0}, {1, 2}), floats({1, 0}, {1, 2}));
  EXPECT_NEAR(mse.result(), 2.5 / 3, kTol);
  mse.reset_state();
  mse.update_state(y_true, y_pred, floats({1, 0}, {2}));
  EXPECT_NEAR(mse.result(), 0.5, kTol);
}

TEST(MeanAbsoluteErrorMetric, RunningMeanOfPerSampleErrors) {
  // Keras's docstring: the same data -> per-sample [0.5, 0] -> 0.25; weighted [1, 0] -> 0.5.
  Tensor y_true = floats({0, 1, 0, 0}, {2, 2});
  Tensor y_pred = floats({1, 1, 0, 0}, {2, 2});
  MeanAbsoluteError mae;
  EXPECT_EQ(mae.name(), "mean_absolute_error");
  mae.update_state(y_true, y_pred);
  EXPECT_NEAR(mae.result(), 0.25, kTol);
  mae.reset_state();
  mae.update_state(y_true, y_pred, floats({1, 0}, {2}));
  EXPECT_NEAR(mae.result(), 0.5, kTol);
}

TEST(RegressionMetrics, ShapeMismatchNamesTheMetric) {
  MeanSquaredError mse({.name = "mse"});
  std::string m = error_message<ShapeError>([&] { mse.update_state(Tensor::ones({4, 2}), Tensor::ones({4, 3})); });
  EXPECT_TRUE(contains(m, "[mse] y_true is [4,2] and y_pred is [4,3]")) << m;
}

}  // namespace
}  // namespace kestrel::metrics
