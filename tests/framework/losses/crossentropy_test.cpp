// The cross-entropy losses against values computed by hand from Keras's formulas, their options,
// errors and gradients.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "framework/autodiff/gradcheck.h"
#include "framework/autodiff/value_and_grad.h"
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
using testing::int64s;
using testing::kLooseTol;

// log(sum(exp(row))), for writing expected values.
double logsumexp(const std::vector<double>& row) {
  double total = 0;
  for (double v : row) total += std::exp(v);
  return std::log(total);
}

// ---- SparseCategoricalCrossentropy ----

TEST(SparseCategoricalCrossentropy, DefaultsAreKeras) {
  SparseCategoricalCrossentropy loss;
  EXPECT_EQ(loss.name(), "sparse_categorical_crossentropy");
  EXPECT_EQ(loss.reduction(), Reduction::sum_over_batch_size);
  EXPECT_FALSE(loss.options().from_logits);
  EXPECT_FALSE(loss.options().ignore_class.has_value());
  EXPECT_EQ(loss.options().axis, -1);
}

TEST(SparseCategoricalCrossentropy, FromProbabilities) {
  // Keras's docstring example: -log p[label] = [-log 0.95, -log 0.1]; the 0 is clipped to 1e-7.
  Tensor labels = int64s({1, 2}, {2});
  Tensor probs = floats({0.05f, 0.95f, 0.0f, 0.1f, 0.8f, 0.1f}, {2, 3});
  SparseCategoricalCrossentropy loss({.reduction = Reduction::none});
  expect_values(loss(labels, probs), {-std::log(0.95), -std::log(0.1)}, kLooseTol);
  // Mean: (0.051293 + 2.302585) / 2.
  EXPECT_NEAR(SparseCategoricalCrossentropy()(labels, probs).item(), 1.176939, kLooseTol);
}

TEST(SparseCategoricalCrossentropy, ProbabilitiesAreNormalizedAndClipped) {
  // Rows are divided by their sum first (2 * [0.25, 0.75] is [0.25, 0.75]); a 0 probability at the
  // label is clipped to 1e-7, giving -log(1e-7) instead of infinity.
  Tensor labels = int64s({1, 0}, {2});
  Tensor probs = floats({0.5f, 1.5f, 0.0f, 1.0f}, {2, 2});
  expect_values(SparseCategoricalCrossentropy({.reduction = Reduction::none})(labels, probs),
                {-std::log(0.75), -std::log(1e-7)}, 1e-4);
}

TEST(SparseCategoricalCrossentropy, FromLogits) {
  // logsumexp(row) - row[label]: [logsumexp(1,2,3) - 3, logsumexp(1,1,1) - 1] = [0.407606, 1.098612].
  Tensor labels = int64s({2, 0}, {2});
  Tensor logits = floats({1, 2, 3, 1, 1, 1}, {2, 3});
  SparseCategoricalCrossentropy loss({.from_logits = true, .reduction = Reduction::none});
  expect_values(loss(labels, logits), {logsumexp({1, 2, 3}) - 3, logsumexp({1, 1, 1}) - 1}, kLooseTol);
  EXPECT_NEAR(SparseCategoricalCrossentropy({.from_logits = true})(labels, logits).item(), 0.753109, kLooseTol);
}

TEST(SparseCategoricalCrossentropy, LabelsMayBeInt32FloatOrTrailingOne) {
  Tensor logits = floats({1, 2, 3, 1, 1, 1}, {2, 3});
  SparseCategoricalCrossentropy loss({.from_logits = true});
  const double want = 0.753109;
  EXPECT_NEAR(loss(Tensor::from_vector<std::int32_t>({2, 0}, {2}), logits).item(), want, kLooseTol);
  EXPECT_NEAR(loss(floats({2, 0}, {2}), logits).item(), want, kLooseTol);
  EXPECT_NEAR(loss(int64s({2, 0}, {2, 1}), logits).item(), want, kLooseTol);
}

TEST(SparseCategoricalCrossentropy, IgnoreClassMasksAndChangesTheMeansDenominator) {
  Tensor labels = int64s({2, -1, 0}, {3});
  Tensor logits = floats({1, 2, 3, 5, 0, 0, 1, 1, 1}, {3, 3});
  SparseCategoricalCrossentropy none({.from_logits = true, .ignore_class = -1, .reduction = Reduction::none});
  const double a = logsumexp({1, 2, 3}) - 3, c = logsumexp({1, 1, 1}) - 1;
  expect_values(none(labels, logits), {a, 0.0, c}, kLooseTol);
  expect_values(none.mask(labels, logits), {1, 0, 1}, kLooseTol);
  expect_values(none.label_mask(labels), {1, 0, 1}, kLooseTol);  // the same, from the labels alone
  expect_values(none.label_mask(floats({2, -1, 0}, {3, 1})), {1, 0, 1}, kLooseTol);
  EXPECT_FALSE(SparseCategoricalCrossentropy({.from_logits = true}).label_mask(labels).defined());
  // Two unmasked positions: (a + c) / 2 = 0.753109, not (a + c) / 3 = 0.502073.
  SparseCategoricalCrossentropy mean({.from_logits = true, .ignore_class = -1});
  EXPECT_NEAR(mean(labels, logits).item(), (a + c) / 2, kLooseTol);
  // Weighted: (1 * a + 5 * 0 + 3 * c) / 2 = 1.851721.
  EXPECT_NEAR(mean(labels, logits, floats({1, 5, 3}, {3})).item(), (a + 3 * c) / 2, kLooseTol);
  SparseCategoricalCrossentropy sum({.from_logits = true, .ignore_class = -1, .reduction = Reduction::sum});
  EXPECT_NEAR(sum(labels, logits).item(), a + c, kLooseTol);
}

TEST(SparseCategoricalCrossentropy, IgnoreClassCanBeARealClassIndex) {
  // ignore_class = 0 (e.g. a padding token id): rows labelled 0 do not count.
  Tensor labels = int64s({2, 0}, {2});
  Tensor logits = floats({1, 2, 3, 1, 1, 1}, {2, 3});
  SparseCategoricalCrossentropy loss({.from_logits = true, .ignore_class = 0});
  EXPECT_NEAR(loss(labels, logits).item(), logsumexp({1, 2, 3}) - 3, kLooseTol);
}

TEST(SparseCategoricalCrossentropy, EverythingIgnoredGivesZero) {
  SparseCategoricalCrossentropy loss({.from_logits = true, .ignore_class = -1});
  EXPECT_EQ(loss(int64s({-1, -1}, {2}), floats({1, 2, 3, 4}, {2, 2})).item(), 0.0);
}

TEST(SparseCategoricalCrossentropy, IgnoredPositionsGetNoGradient) {
  Tensor labels = int64s({2, -1, 0}, {3});
  Tensor logits = random::normal({3, 3}, random::Key(4));
  SparseCategoricalCrossentropy loss({.from_logits = true, .ignore_class = -1});
  auto grads = grad([&](const std::vector<Tensor>& a) { return loss(labels, a[0]); }, {logits});
  std::vector<float> g = grads[0].to_vector<float>();
  for (int c = 0; c < 3; ++c) EXPECT_EQ(g[3 + c], 0.0f);
  EXPECT_NE(g[0], 0.0f);
}

TEST(SparseCategoricalCrossentropy, ClassAxisOtherThanLast) {
  // Classes on axis 1 of [batch, classes, time]: the same losses as with classes last.
  Tensor logits_last = random::normal({2, 4, 3}, random::Key(5));  // [batch, time, classes]
  Tensor labels = int64s({0, 2, 1, 1, 0, 2, 2, 1}, {2, 4});
  Tensor logits_mid = ops::transpose(logits_last, {0, 2, 1});  // [batch, classes, time]
  SparseCategoricalCrossentropy last({.from_logits = true, .reduction = Reduction::none});
  SparseCategoricalCrossentropy mid({.from_logits = true, .axis = 1, .reduction = Reduction::none});
  expect_values(mid(labels, logits_mid), last(labels, logits_last).to_vector<double>(), kLooseTol);
}

TEST(SparseCategoricalCrossentropy, ShapeMismatchNamesTheLossAndBothShapes) {
  SparseCategoricalCrossentropy loss;
  std::string m = error_message<ShapeError>([&] { loss(int64s({1, 2, 0}, {3}), Tensor::ones({4, 5})); });
  EXPECT_TRUE(contains(m, "[sparse_categorical_crossentropy]")) << m;
  EXPECT_TRUE(contains(m, "y_true is [3]")) << m;
  EXPECT_TRUE(contains(m, "y_pred is [4,5]")) << m;
  SparseCategoricalCrossentropy named({.name = "token_loss"});
  EXPECT_TRUE(contains(error_message<ShapeError>([&] {
                         named(int64s({1}, {1}), Tensor::ones({4, 5}));
                       }),
                       "[token_loss]"));
}

TEST(SparseCategoricalCrossentropy, OutOfRangeLabelNamesTheLoss) {
  SparseCategoricalCrossentropy loss({.from_logits = true});
  std::string m = error_message<IndexError>([&] { loss(int64s({1, 7}, {2}), Tensor::zeros({2, 3})); });
  EXPECT_TRUE(contains(m, "[sparse_categorical_crossentropy]")) << m;
  EXPECT_TRUE(contains(m, "outside [0, 3)")) << m;
  EXPECT_TRUE(contains(m, "labels[1] is 7")) << m;
  EXPECT_TRUE(contains(m, "ignore_class")) << m;
  // -100 is an ordinary bad label here: only ignore_class masks.
  error_message<IndexError>([&] { loss(int64s({1, -100}, {2}), Tensor::zeros({2, 3})); });
}

TEST(SparseCategoricalCrossentropy, GradientsMatchFiniteDifferences) {
  Tensor labels = int64s({0, 3, 1, 2, -1, 3}, {2, 3});
  for (bool from_logits : {true, false}) {
    SparseCategoricalCrossentropy loss({.from_logits = from_logits, .ignore_class = -1});
    // Probabilities are kept inside (0.1, 1) so clipping never binds.
    Tensor y_pred =
        from_logits ? random::normal({2, 3, 4}, random::Key(6)) : random::uniform({2, 3, 4}, random::Key(6), 0.1, 1.0);
    GradcheckResult r = gradcheck([&](const std::vector<Tensor>& a) { return loss(a[1], a[0]); }, {y_pred, labels});
    EXPECT_TRUE(r.ok) << "from_logits=" << from_logits << ": " << r.report;
  }
}

// ---- CategoricalCrossentropy ----

TEST(CategoricalCrossentropy, FromProbabilities) {
  // Keras's docstring example: -sum(y * log p) = [-log 0.95, -log 0.1].
  Tensor y_true = floats({0, 1, 0, 0, 0, 1}, {2, 3});
  Tensor probs = floats({0.05f, 0.95f, 0.0f, 0.1f, 0.8f, 0.1f}, {2, 3});
  CategoricalCrossentropy loss({.reduction = Reduction::none});
  EXPECT_EQ(CategoricalCrossentropy().name(), "categorical_crossentropy");
  expect_values(loss(y_true, probs), {-std::log(0.95), -std::log(0.1)}, kLooseTol);
  EXPECT_NEAR(CategoricalCrossentropy()(y_true, probs).item(), 1.176939, kLooseTol);
}

TEST(CategoricalCrossentropy, FromLogitsWithLabelSmoothing) {
  // Smoothed targets y * 0.9 + 0.1 / 3, against log_softmax(z):
  //   row 0: y = [0,1,0], z = [2, 1, 0.1] -> 1.413697; row 1: y = [0,0,1], z = [0.5, 0.5, 3] -> 0.318675.
  Tensor y_true = floats({0, 1, 0, 0, 0, 1}, {2, 3});
  Tensor logits = floats({2.0f, 1.0f, 0.1f, 0.5f, 0.5f, 3.0f}, {2, 3});
  CategoricalCrossentropy smoothed({.from_logits = true, .label_smoothing = 0.1, .reduction = Reduction::none});
  expect_values(smoothed(y_true, logits), {1.413697, 0.318675}, kLooseTol);
  // Without smoothing: -log_softmax(z)[label] = [logsumexp(2,1,0.1) - 1, logsumexp(0.5,0.5,3) - 3].
  CategoricalCrossentropy plain({.from_logits = true, .reduction = Reduction::none});
  expect_values(plain(y_true, logits), {logsumexp({2, 1, 0.1}) - 1, logsumexp({0.5, 0.5, 3}) - 3}, kLooseTol);
}

TEST(CategoricalCrossentropy, ShapeMismatchAndBadSmoothing) {
  CategoricalCrossentropy loss;
  std::string m = error_message<ShapeError>([&] { loss(Tensor::ones({2, 4}), Tensor::ones({2, 3})); });
  EXPECT_TRUE(contains(m, "[categorical_crossentropy] y_true is [2,4] and y_pred is [2,3]")) << m;
  EXPECT_TRUE(contains(error_message<ValueError>([] { CategoricalCrossentropy({.label_smoothing = 1.5}); }),
                       "label_smoothing"));
}

TEST(CategoricalCrossentropy, GradientsMatchFiniteDifferences) {
  Tensor y_true = ops::softmax(random::normal({3, 4}, random::Key(7)));
  for (bool from_logits : {true, false}) {
    CategoricalCrossentropy loss({.from_logits = from_logits, .label_smoothing = 0.1});
    Tensor y_pred =
        from_logits ? random::normal({3, 4}, random::Key(8)) : random::uniform({3, 4}, random::Key(8), 0.1, 1.0);
    GradcheckResult r = gradcheck([&](const std::vector<Tensor>& a) { return loss(a[0], a[1]); }, {y_true, y_pred});
    EXPECT_TRUE(r.ok) << "from_logits=" << from_logits << ": " << r.report;
  }
}

// ---- BinaryCrossentropy ----

TEST(BinaryCrossentropy, FromProbabilities) {
  // Keras's docstring example: the mean over the last axis of -(y log p + (1 - y) log(1 - p)):
  //   row 0: (-log 0.4 - log 0.4) / 2 = 0.916291; row 1: (-log 0.6 - log 0.4) / 2 = 0.713558.
  Tensor y_true = floats({0, 1, 0, 0}, {2, 2});
  Tensor probs = floats({0.6f, 0.4f, 0.4f, 0.6f}, {2, 2});
  EXPECT_EQ(BinaryCrossentropy().name(), "binary_crossentropy");
  expect_values(BinaryCrossentropy({.reduction = Reduction::none})(y_true, probs), {0.916291, 0.713558}, kLooseTol);
  EXPECT_NEAR(BinaryCrossentropy()(y_true, probs).item(), 0.814924, kLooseTol);
}

TEST(BinaryCrossentropy, LabelSmoothingSqueezesTargetsTowardsHalf) {
  // y * 0.8 + 0.1: row 0 targets [0.1, 0.9] -> (bce(0.1, 0.6) + bce(0.9, 0.4)) / 2 = 0.875744;
  // row 1 targets [0.1, 0.1] -> (bce(0.1, 0.4) + bce(0.1, 0.6)) / 2 = 0.713558.
  Tensor y_true = floats({0, 1, 0, 0}, {2, 2});
  Tensor probs = floats({0.6f, 0.4f, 0.4f, 0.6f}, {2, 2});
  BinaryCrossentropy loss({.label_smoothing = 0.2, .reduction = Reduction::none});
  expect_values(loss(y_true, probs), {0.875744, 0.713558}, kLooseTol);
}

TEST(BinaryCrossentropy, FromLogits) {
  // z * softplus(-x) + (1 - z) * softplus(x), averaged per row:
  //   row 0: z = [0, 1], x = [-1, 2] -> 0.220095; row 1: z = [1, 0], x = [0.5, -3] -> 0.261332.
  Tensor y_true = floats({0, 1, 1, 0}, {2, 2});
  Tensor logits = floats({-1, 2, 0.5f, -3}, {2, 2});
  expect_values(BinaryCrossentropy({.from_logits = true, .reduction = Reduction::none})(y_true, logits),
                {0.220095, 0.261332}, kLooseTol);
}

TEST(BinaryCrossentropy, LargeLogitsStayFinite) {
  // softplus(100) = 100 and softplus(-100) = 3.7e-44: no overflow to infinity.
  Tensor y_true = floats({0, 1}, {2, 1});
  Tensor logits = floats({100, -100}, {2, 1});
  expect_values(BinaryCrossentropy({.from_logits = true, .reduction = Reduction::none})(y_true, logits), {100, 100},
                1e-3);
}

TEST(BinaryCrossentropy, RankOneLabelsAlignWithAColumnOfPredictions) {
  // y_true [3] with y_pred [3, 1] is aligned to [3, 1]: one loss per sample, not a [3, 3] broadcast.
  Tensor y_true = floats({1, 0, 1}, {3});
  Tensor probs = floats({0.9f, 0.2f, 0.6f}, {3, 1});
  Tensor none = BinaryCrossentropy({.reduction = Reduction::none})(y_true, probs);
  EXPECT_EQ(none.shape(), Shape{3});
  expect_values(none, {-std::log(0.9), -std::log(0.8), -std::log(0.6)}, kLooseTol);
}

TEST(BinaryCrossentropy, ShapeMismatchNamesTheLossAndBothShapes) {
  std::string m = error_message<ShapeError>([] { BinaryCrossentropy()(Tensor::ones({4, 2}), Tensor::ones({4, 3})); });
  EXPECT_TRUE(contains(m, "[binary_crossentropy] y_true is [4,2] and y_pred is [4,3]")) << m;
}

TEST(BinaryCrossentropy, GradientsMatchFiniteDifferences) {
  Tensor y_true = random::uniform({4, 3}, random::Key(9));
  for (bool from_logits : {true, false}) {
    BinaryCrossentropy loss({.from_logits = from_logits, .label_smoothing = 0.1});
    Tensor y_pred =
        from_logits ? random::normal({4, 3}, random::Key(10)) : random::uniform({4, 3}, random::Key(10), 0.1, 0.9);
    GradcheckResult r = gradcheck([&](const std::vector<Tensor>& a) { return loss(a[0], a[1]); }, {y_true, y_pred});
    EXPECT_TRUE(r.ok) << "from_logits=" << from_logits << ": " << r.report;
  }
}

TEST(Crossentropy, Bfloat16PredictionsGiveAFloat32Loss) {
  Tensor logits = ops::cast(floats({1, 2, 3, 1, 1, 1}, {2, 3}), DType::bfloat16);
  Tensor loss = SparseCategoricalCrossentropy({.from_logits = true})(int64s({2, 0}, {2}), logits);
  EXPECT_EQ(loss.dtype(), DType::float32);
  EXPECT_NEAR(loss.item(), 0.753109, 1e-2);
}

}  // namespace
}  // namespace kestrel::losses
