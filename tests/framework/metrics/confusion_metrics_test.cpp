// Precision, Recall and AUC against counts and areas worked out by hand.
#include "framework/metrics/confusion_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

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

TEST(Precision, TruePositivesOverPredictedPositives) {
  // Keras's docstring: labels [0, 1, 1, 1], predictions [1, 0, 1, 1] -> tp 2, fp 1 -> 2 / 3;
  // weighted [0, 0, 1, 0] only the third counts (a true positive) -> 1.
  Tensor y_true = floats({0, 1, 1, 1}, {4});
  Tensor y_pred = floats({1, 0, 1, 1}, {4});
  Precision precision;
  EXPECT_EQ(precision.name(), "precision");
  EXPECT_EQ(precision.result(), 0.0);
  precision.update_state(y_true, y_pred);
  EXPECT_NEAR(precision.result(), 2.0 / 3, kTol);
  precision.reset_state();
  precision.update_state(y_true, y_pred, floats({0, 0, 1, 0}, {4}));
  EXPECT_NEAR(precision.result(), 1.0, kTol);
}

TEST(Precision, AccumulatesOverBatchesAtSeveralThresholds) {
  // Threshold 0.5 (strictly above is positive): batch 1 gives tp 1 (0.7), fp 1 (0.6); batch 2
  // gives tp 1 (0.9), fp 0 (0.5 is not above 0.5) -> 2 / 3. At 0.65: tp 2, fp 0 -> 1.
  Precision precision({.thresholds = {0.5, 0.65}});
  precision.update_state(floats({1, 0, 1}, {3, 1}), floats({0.7f, 0.6f, 0.2f}, {3, 1}));
  precision.update_state(floats({1, 0}, {2}), floats({0.9f, 0.5f}, {2}));
  std::vector<double> r = precision.results();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_NEAR(r[0], 2.0 / 3, kTol);
  EXPECT_NEAR(r[1], 1.0, kTol);
  EXPECT_NEAR(precision.result(), 2.0 / 3, kTol);
  std::vector<Variable> vars = precision.variables();
  ASSERT_EQ(vars.size(), 2u);
  EXPECT_EQ(vars[0].name(), "precision/true_positives");
  EXPECT_EQ(vars[1].name(), "precision/false_positives");
  EXPECT_EQ(vars[0].shape(), Shape{2});
  EXPECT_FALSE(vars[0].trainable());
}

TEST(Recall, TruePositivesOverActualPositives) {
  // Keras's docstring: labels [0, 1, 1, 1], predictions [1, 0, 1, 1] -> tp 2, fn 1 -> 2 / 3;
  // weighted [0, 0, 1, 0] -> 1.
  Tensor y_true = floats({0, 1, 1, 1}, {4});
  Tensor y_pred = floats({1, 0, 1, 1}, {4});
  Recall recall;
  EXPECT_EQ(recall.name(), "recall");
  recall.update_state(y_true, y_pred);
  EXPECT_NEAR(recall.result(), 2.0 / 3, kTol);
  recall.reset_state();
  recall.update_state(y_true, y_pred, floats({0, 0, 1, 0}, {4}));
  EXPECT_NEAR(recall.result(), 1.0, kTol);
  EXPECT_EQ(recall.variables()[1].name(), "recall/false_negatives");
}

TEST(ConfusionMetrics, PerSampleWeightsCoverEveryLabelOfTheSample) {
  // Two samples of 2 labels; weights [1, 0] drop the second sample: tp 1 (0.9), fn 1 (0.2).
  Recall recall;
  recall.update_state(floats({1, 1, 1, 1}, {2, 2}), floats({0.9f, 0.2f, 0.9f, 0.9f}, {2, 2}), floats({1, 0}, {2}));
  EXPECT_NEAR(recall.result(), 0.5, kTol);
}

TEST(ConfusionMetrics, ErrorsNameTheMetric) {
  std::string m = error_message<ShapeError>([] { Precision().update_state(Tensor::ones({3}), Tensor::ones({4})); });
  EXPECT_TRUE(contains(m, "[precision] y_true is [3] and y_pred is [4]")) << m;
  m = error_message<ShapeError>([] { AUC().update_state(Tensor::ones({2, 3}), Tensor::ones({2, 2})); });
  EXPECT_TRUE(contains(m, "[auc] y_true is [2,3] and y_pred is [2,2]")) << m;
  m = error_message<ShapeError>([] { Recall().update_state(Tensor::ones({4}), Tensor::ones({4}), Tensor::ones({3})); });
  EXPECT_TRUE(contains(m, "[recall] sample_weight is [3]")) << m;
  EXPECT_TRUE(contains(error_message<ValueError>([] { Recall({.thresholds = {1.5}}); }), "outside [0, 1]"));
  EXPECT_TRUE(contains(error_message<ValueError>([] { Precision({.thresholds = {}}); }), "empty"));
  EXPECT_TRUE(contains(error_message<ValueError>([] { AUC({.num_thresholds = 1}); }), "num_thresholds"));
  EXPECT_TRUE(contains(error_message<ValueError>([] { AUC({.curve = "PR_GAIN"}); }), "curve"));
  EXPECT_TRUE(contains(error_message<ValueError>([] { AUC({.summation_method = "riemann"}); }), "summation_method"));
}

// labels [0, 0, 1, 1], scores [0.1, 0.4, 0.35, 0.8]. With 3 thresholds (-1e-7, 0.5, 1 + 1e-7):
//   tp [2, 1, 0], fp [2, 0, 0], tn [0, 2, 2], fn [0, 1, 2]
//   ROC points (fpr, tpr): (1, 1), (0, 0.5), (0, 0)
//   trapezoids: (1 - 0) * (1 + 0.5) / 2 + 0 = 0.75
class AUCSmallCase : public ::testing::Test {
 protected:
  Tensor y_true_ = floats({0, 0, 1, 1}, {4});
  Tensor y_pred_ = floats({0.1f, 0.4f, 0.35f, 0.8f}, {4});
};

TEST_F(AUCSmallCase, ROCWithThreeThresholds) {
  AUC auc({.num_thresholds = 3});
  auc.update_state(y_true_, y_pred_);
  EXPECT_NEAR(auc.result(), 0.75, kTol);
  std::vector<Variable> vars = auc.variables();
  ASSERT_EQ(vars.size(), 4u);
  std::vector<std::vector<double>> want = {{2, 1, 0}, {2, 0, 0}, {0, 2, 2}, {0, 1, 2}};
  const char* names[] = {"auc/true_positives", "auc/false_positives", "auc/true_negatives", "auc/false_negatives"};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(vars[i].name(), names[i]);
    EXPECT_EQ(vars[i].value().to_vector<double>(), want[i]) << names[i];
  }
}

TEST_F(AUCSmallCase, ROCWithDefaultThresholdsIsTheExactArea) {
  // 200 thresholds separate every score: the area is the fraction of (positive, negative) pairs
  // ranked correctly, 3 / 4.
  AUC auc;
  EXPECT_EQ(auc.name(), "auc");
  auc.update_state(y_true_, y_pred_);
  EXPECT_NEAR(auc.result(), 0.75, 1e-5);
}

TEST_F(AUCSmallCase, PRInterpolation) {
  // Davis & Goadrich over the 3 thresholds; P = tp + fp = [4, 1, 0]:
  //   interval 0: slope = dtp / dP = 1 / 3, intercept = tp1 - slope * P1 = 2 / 3,
  //               area = slope * (dtp + intercept * log(P0 / P1)) / (tp1 + fn1) = (1 + (2/3) log 4) / 6
  //   interval 1: slope = 1, intercept = 0, P2 = 0 so the log term is 0: area = 1 * 1 / 2
  //   total = 0.3206994 + 0.5 = 0.8206994
  AUC auc({.num_thresholds = 3, .curve = "PR"});
  auc.update_state(y_true_, y_pred_);
  EXPECT_NEAR(auc.result(), (1 + (2.0 / 3) * std::log(4.0)) / 6 + 0.5, kTol);
}

TEST_F(AUCSmallCase, MinoringAndMajoring) {
  // ROC heights per interval: min(1, 0.5) = 0.5 or max = 1 over the width 1; the second interval has width 0.
  AUC minoring({.num_thresholds = 3, .summation_method = "minoring"});
  AUC majoring({.num_thresholds = 3, .summation_method = "majoring"});
  minoring.update_state(y_true_, y_pred_);
  majoring.update_state(y_true_, y_pred_);
  EXPECT_NEAR(minoring.result(), 0.5, kTol);
  EXPECT_NEAR(majoring.result(), 1.0, kTol);
  // PR points (recall, precision): (1, 0.5), (0.5, 1), (0, 0): minoring 0.5 * 0.5 + 0.5 * 0 = 0.25.
  AUC pr_minoring({.num_thresholds = 3, .curve = "pr", .summation_method = "minoring"});
  pr_minoring.update_state(y_true_, y_pred_);
  EXPECT_NEAR(pr_minoring.result(), 0.25, kTol);
}

TEST_F(AUCSmallCase, WeightedAndAccumulated) {
  // Weights [1, 2, 3, 4]: tp [7, 4, 0], fp [3, 0, 0], tn [0, 3, 3], fn [0, 3, 7].
  // ROC points (1, 1), (0, 4/7), (0, 0): area (1 + 4/7) / 2 = 0.7857143.
  AUC auc({.num_thresholds = 3});
  auc.update_state(y_true_, y_pred_, floats({1, 2, 3, 4}, {4}));
  EXPECT_NEAR(auc.result(), 11.0 / 14, kTol);
  // Two half batches add up to the same counts.
  AUC halves({.num_thresholds = 3});
  halves.update_state(floats({0, 0}, {2}), floats({0.1f, 0.4f}, {2}), floats({1, 2}, {2}));
  halves.update_state(floats({1, 1}, {2}), floats({0.35f, 0.8f}, {2}), floats({3, 4}, {2}));
  EXPECT_NEAR(halves.result(), 11.0 / 14, kTol);
  halves.reset_state();
  EXPECT_EQ(halves.result(), 0.0);
}

TEST(AUC, LargerROCMatchesThePairwiseArea) {
  // Positives [0.91, 0.62, 0.47, 0.33], negatives [0.81, 0.44, 0.28, 0.15, 0.07]: 16 of the 20
  // (positive, negative) pairs are ordered correctly -> 0.8.
  AUC auc;
  auc.update_state(floats({1, 1, 1, 1}, {4}), floats({0.91f, 0.62f, 0.47f, 0.33f}, {4}));
  auc.update_state(floats({0, 0, 0, 0, 0}, {5, 1}), floats({0.81f, 0.44f, 0.28f, 0.15f, 0.07f}, {5, 1}));
  EXPECT_NEAR(auc.result(), 0.8, 1e-5);
}

TEST(AUC, FromLogitsAppliesASigmoid) {
  // sigmoid is monotonic, so logits rank the samples as the probabilities do.
  Tensor y_true = floats({0, 0, 1, 1}, {4});
  Tensor probs = floats({0.1f, 0.4f, 0.35f, 0.8f}, {4});
  Tensor logits = ops::log(probs / (1.0 - probs));
  AUC auc({.from_logits = true});
  auc.update_state(y_true, logits);
  EXPECT_NEAR(auc.result(), 0.75, 1e-5);
}

TEST(AUC, PredictionsOutsideTheUnitIntervalAreClipped) {
  // 1.7 counts as 1 and -0.3 as 0: the ranking is unchanged.
  AUC auc({.num_thresholds = 3});
  auc.update_state(floats({0, 1}, {2}), floats({-0.3f, 1.7f}, {2}));
  EXPECT_NEAR(auc.result(), 1.0, kTol);
}

}  // namespace
}  // namespace kestrel::metrics
