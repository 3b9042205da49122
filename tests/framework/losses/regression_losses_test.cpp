// MeanSquaredError and MeanAbsoluteError against Keras's formulas, their errors and gradients.
#include <gtest/gtest.h>

#include <vector>

#include "framework/autodiff/gradcheck.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/losses/losses.h"
#include "framework/ops/ops.h"
#include "tests/support/error_message.h"
#include "tests/support/tensor_values.h"

namespace kestrel::losses {
namespace {

using testing::contains;
using testing::error_message;
using testing::expect_values;
using testing::floats;
using testing::kTol;

TEST(MeanSquaredError, MeanOverTheLastAxisPerSample) {
  // mean((y - p)^2, axis=-1): row 0 ((1-0.5)^2 + (2-4)^2) / 2 = 2.125; row 1 (0 + 3^2) / 2 = 4.5.
  Tensor y_true = floats({1, 2, 0, 0}, {2, 2});
  Tensor y_pred = floats({0.5f, 4, 0, 3}, {2, 2});
  EXPECT_EQ(MeanSquaredError().name(), "mean_squared_error");
  expect_values(mean_squared_error(y_true, y_pred), {2.125, 4.5}, kTol);
  expect_values(MeanSquaredError({.reduction = Reduction::none})(y_true, y_pred), {2.125, 4.5}, kTol);
  EXPECT_NEAR(MeanSquaredError()(y_true, y_pred).item(), (2.125 + 4.5) / 2, kTol);
}

TEST(MeanAbsoluteError, MeanOverTheLastAxisPerSample) {
  // mean(|y - p|, axis=-1): row 0 (0.5 + 2) / 2 = 1.25; row 1 (0 + 3) / 2 = 1.5.
  Tensor y_true = floats({1, 2, 0, 0}, {2, 2});
  Tensor y_pred = floats({0.5f, 4, 0, 3}, {2, 2});
  EXPECT_EQ(MeanAbsoluteError().name(), "mean_absolute_error");
  expect_values(mean_absolute_error(y_true, y_pred), {1.25, 1.5}, kTol);
  EXPECT_NEAR(MeanAbsoluteError()(y_true, y_pred).item(), 1.375, kTol);
  EXPECT_NEAR(MeanAbsoluteError({.reduction = Reduction::sum})(y_true, y_pred).item(), 2.75, kTol);
  // Weighted by [1, 3]: (1.25 + 4.5) / 2.
  EXPECT_NEAR(MeanAbsoluteError()(y_true, y_pred, floats({1, 3}, {2})).item(), 2.875, kTol);
}

TEST(MeanSquaredError, RankOneTargetsAlignWithAColumnOfPredictions) {
  // y_true [3] and y_pred [3, 1] are aligned to [3, 1]: per-sample (y - p)^2 = [1, 0, 4].
  Tensor y_true = floats({1, 2, 3}, {3});
  Tensor y_pred = floats({0, 2, 5}, {3, 1});
  Tensor none = MeanSquaredError({.reduction = Reduction::none})(y_true, y_pred);
  EXPECT_EQ(none.shape(), Shape{3});
  expect_values(none, {1, 0, 4}, kTol);
}

TEST(MeanSquaredError, IntegerTargetsAreCast) {
  Tensor y_true = Tensor::from_vector<std::int32_t>({1, 2}, {2, 1});
  EXPECT_NEAR(MeanSquaredError()(y_true, floats({2, 2}, {2, 1})).item(), 0.5, kTol);
}

TEST(MeanSquaredError, ShapeMismatchNamesTheLossAndBothShapes) {
  std::string m = error_message<ShapeError>([] { MeanSquaredError()(Tensor::ones({4, 2}), Tensor::ones({4, 3})); });
  EXPECT_TRUE(contains(m, "[mean_squared_error] y_true is [4,2] and y_pred is [4,3]")) << m;
  m = error_message<ShapeError>([] { MeanAbsoluteError({.name = "l1"})(Tensor::ones({5}), Tensor::ones({4})); });
  EXPECT_TRUE(contains(m, "[l1] y_true is [5] and y_pred is [4]")) << m;
  m = error_message<ShapeError>([] { MeanSquaredError()(Tensor::scalar(1), Tensor::scalar(2)); });
  EXPECT_TRUE(contains(m, "scalars")) << m;
}

TEST(RegressionLosses, GradientsMatchFiniteDifferences) {
  Tensor y_true = random::normal({3, 4}, random::Key(11));
  // Predictions well away from the targets, so |y - p| is differentiable at every step.
  Tensor y_pred = y_true + 0.5 + random::uniform({3, 4}, random::Key(12));
  Tensor w = floats({1, 2, 0.5f}, {3});
  MeanSquaredError mse;
  MeanAbsoluteError mae;
  GradcheckResult r = gradcheck([&](const std::vector<Tensor>& a) { return mse(a[0], a[1], w); }, {y_true, y_pred});
  EXPECT_TRUE(r.ok) << "mse: " << r.report;
  r = gradcheck([&](const std::vector<Tensor>& a) { return mae(a[0], a[1], w); }, {y_true, y_pred});
  EXPECT_TRUE(r.ok) << "mae: " << r.report;
}

}  // namespace
}  // namespace kestrel::losses
