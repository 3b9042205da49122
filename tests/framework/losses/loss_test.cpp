// Loss::operator(): sample weights, masks and the three reductions, as keras.losses.Loss.__call__.
#include "framework/losses/loss.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "framework/autodiff/value_and_grad.h"
#include "framework/core/error.h"
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
using testing::kLooseTol;

// Keras's MeanSquaredError docstring example: per-sample losses [0.5, 0.5].
class LossReduction : public ::testing::Test {
 protected:
  Tensor y_true_ = floats({0, 1, 0, 0}, {2, 2});
  Tensor y_pred_ = floats({1, 1, 1, 0}, {2, 2});
};

TEST_F(LossReduction, SumOverBatchSizeIsTheDefault) {
  MeanSquaredError mse;
  EXPECT_EQ(mse.reduction(), Reduction::sum_over_batch_size);
  Tensor loss = mse(y_true_, y_pred_);
  EXPECT_EQ(loss.shape(), Shape{});
  EXPECT_NEAR(loss.item(), 0.5, kLooseTol);  // (0.5 + 0.5) / 2
}

TEST_F(LossReduction, SumAndNone) {
  EXPECT_NEAR(MeanSquaredError({.reduction = Reduction::sum})(y_true_, y_pred_).item(), 1.0, kLooseTol);
  Tensor none = MeanSquaredError({.reduction = Reduction::none})(y_true_, y_pred_);
  EXPECT_EQ(none.shape(), Shape{2});
  expect_values(none, {0.5, 0.5}, kLooseTol);
}

TEST_F(LossReduction, SampleWeightsScaleEachSample) {
  MeanSquaredError mse;
  Tensor w = floats({0.7f, 0.3f}, {2});
  // sum(0.5 * 0.7 + 0.5 * 0.3) / 2 samples = 0.25 (Keras's docstring value).
  EXPECT_NEAR(mse(y_true_, y_pred_, w).item(), 0.25, kLooseTol);
  // [batch, 1] weights line up with [batch] losses.
  EXPECT_NEAR(mse(y_true_, y_pred_, floats({0.7f, 0.3f}, {2, 1})).item(), 0.25, kLooseTol);
  // A scalar weight scales everything: 2 * 1.0 / 2.
  EXPECT_NEAR(mse(y_true_, y_pred_, Tensor::scalar(2.0)).item(), 1.0, kLooseTol);
  expect_values(MeanSquaredError({.reduction = Reduction::none})(y_true_, y_pred_, w), {0.35, 0.15}, kLooseTol);
  EXPECT_NEAR(MeanSquaredError({.reduction = Reduction::sum})(y_true_, y_pred_, w).item(), 0.5, kLooseTol);
}

TEST_F(LossReduction, PerSampleWeightsBroadcastOverSequencePositions) {
  // Per-position losses [2, 3] (logits are uniform, so each is log(2)); weights [2] weigh samples.
  SparseCategoricalCrossentropy loss({.from_logits = true, .reduction = Reduction::none});
  Tensor labels = Tensor::from_vector<std::int64_t>({0, 1, 0, 1, 0, 1}, {2, 3});
  Tensor logits = Tensor::zeros({2, 3, 2});
  Tensor weighted = loss(labels, logits, floats({1.0f, 3.0f}, {2}));
  const double l = std::log(2.0);
  expect_values(weighted, {l, l, l, 3 * l, 3 * l, 3 * l}, kLooseTol);
}

TEST_F(LossReduction, IntegerSampleWeightsAreCastToFloat) {
  MeanSquaredError mse;
  EXPECT_NEAR(mse(y_true_, y_pred_, Tensor::from_vector<std::int32_t>({1, 0}, {2})).item(), 0.25, kLooseTol);
}

TEST_F(LossReduction, SampleWeightShapeMismatchNamesTheLossAndShapes) {
  MeanSquaredError mse;
  std::string m = error_message<ShapeError>([&] { mse(y_true_, y_pred_, floats({1, 2, 3}, {3})); });
  EXPECT_TRUE(contains(m, "[mean_squared_error]")) << m;
  EXPECT_TRUE(contains(m, "sample_weight is [3]")) << m;
  EXPECT_TRUE(contains(m, "[2]")) << m;
}

TEST_F(LossReduction, UndefinedInputsAreRejected) {
  MeanSquaredError mse;
  EXPECT_TRUE(contains(error_message<ValueError>([&] { mse(Tensor(), y_pred_); }), "y_true"));
  EXPECT_TRUE(contains(error_message<ValueError>([&] { mse(y_true_, Tensor()); }), "y_pred"));
}

// A loss whose mask drops the elements where y_true is negative: the base class multiplies the
// mask in and, for sum_over_batch_size, divides by the number of unmasked elements.
class MaskedAbsoluteError : public Loss {
 public:
  explicit MaskedAbsoluteError(Reduction reduction) : Loss("masked_absolute_error", reduction) {}
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override { return ops::abs(y_true - y_pred); }
  Tensor mask(const Tensor& y_true, const Tensor& y_pred) const override {
    return ops::greater_equal(y_true, ops::scalar_like(y_true, 0.0));
  }
};

TEST(LossMask, MaskedElementsLeaveTheSumAndTheCount) {
  Tensor t = floats({1, -1, 2, -1}, {4});
  Tensor p = floats({0, 5, 0, 7}, {4});
  // Unmasked |errors| 1 and 2: the mean is 3 / 2, not 3 / 4.
  EXPECT_NEAR(MaskedAbsoluteError(Reduction::sum_over_batch_size)(t, p).item(), 1.5, kLooseTol);
  EXPECT_NEAR(MaskedAbsoluteError(Reduction::sum)(t, p).item(), 3.0, kLooseTol);
  expect_values(MaskedAbsoluteError(Reduction::none)(t, p), {1, 0, 2, 0}, kLooseTol);
  // Weighted: (1 * 2 + 2 * 4) / 2 unmasked.
  EXPECT_NEAR(MaskedAbsoluteError(Reduction::sum_over_batch_size)(t, p, floats({2, 3, 4, 5}, {4})).item(), 5.0,
              kLooseTol);
}

TEST(LossMask, EverythingMaskedGivesZeroAndAFiniteGradient) {
  Tensor t = floats({-1, -1}, {2});
  MaskedAbsoluteError loss(Reduction::sum_over_batch_size);
  auto [value, grads] =
      value_and_grad([&](const std::vector<Tensor>& a) { return loss(t, a[0]); }, {floats({3, 4}, {2})});
  EXPECT_EQ(value.item(), 0.0);
  expect_values(grads[0], {0, 0}, kLooseTol);
}

}  // namespace
}  // namespace kestrel::losses
