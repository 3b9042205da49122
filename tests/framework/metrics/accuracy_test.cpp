// The accuracy metrics against Keras's docstring examples and hand-counted matches, with and
// without sample weights, reset, and their shape errors.
#include "framework/metrics/accuracy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "framework/core/error.h"
#include "framework/ops/ops.h"
#include "tests/support/error_message.h"
#include "tests/support/tensor_values.h"

namespace kestrel::metrics {
namespace {

using testing::contains;
using testing::error_message;
using testing::expect_values;
using testing::floats;
using testing::int64s;
using testing::kTol;

TEST(Accuracy, ExactMatches) {
  // Keras's docstring: [1, 2, 3, 4] vs [0, 2, 3, 4] -> 3 / 4; weighted [1, 1, 0, 0] -> 1 / 2.
  Tensor y_true = floats({1, 2, 3, 4}, {4, 1});
  Tensor y_pred = floats({0, 2, 3, 4}, {4, 1});
  Accuracy acc;
  EXPECT_EQ(acc.name(), "accuracy");
  acc.update_state(y_true, y_pred);
  EXPECT_NEAR(acc.result(), 0.75, kTol);
  acc.reset_state();
  acc.update_state(y_true, y_pred, floats({1, 1, 0, 0}, {4}));
  EXPECT_NEAR(acc.result(), 0.5, kTol);
  // Integer targets compare with float predictions.
  expect_values(accuracy(Tensor::from_vector<std::int32_t>({1, 2}, {2}), floats({1, 3}, {2})), {1, 0}, kTol);
}

TEST(BinaryAccuracy, ThresholdedPredictions) {
  // Keras's docstring: [1, 1, 0, 0] vs [0.98, 1, 0, 0.6] -> 3 / 4; weighted [1, 0, 0, 1] -> 1 / 2.
  Tensor y_true = floats({1, 1, 0, 0}, {4, 1});
  Tensor y_pred = floats({0.98f, 1, 0, 0.6f}, {4, 1});
  BinaryAccuracy acc;
  EXPECT_EQ(acc.name(), "binary_accuracy");
  acc.update_state(y_true, y_pred);
  EXPECT_NEAR(acc.result(), 0.75, kTol);
  acc.reset_state();
  acc.update_state(y_true, y_pred, floats({1, 0, 0, 1}, {4}));
  EXPECT_NEAR(acc.result(), 0.5, kTol);
  // A threshold of 0 suits logits; rank-1 labels align with a column of predictions.
  BinaryAccuracy logits({.threshold = 0.0});
  logits.update_state(floats({1, 0, 1}, {3}), floats({2.5f, -1, -0.5f}, {3, 1}));
  EXPECT_NEAR(logits.result(), 2.0 / 3, kTol);
}

TEST(CategoricalAccuracy, ArgmaxOfOneHotTargets) {
  // Keras's docstring: classes 2 and 1 vs argmax 1 and 1 -> 1 / 2; weighted [0.7, 0.3] -> 0.3.
  Tensor y_true = floats({0, 0, 1, 0, 1, 0}, {2, 3});
  Tensor y_pred = floats({0.1f, 0.9f, 0.8f, 0.05f, 0.95f, 0}, {2, 3});
  CategoricalAccuracy acc;
  EXPECT_EQ(acc.name(), "categorical_accuracy");
  acc.update_state(y_true, y_pred);
  EXPECT_NEAR(acc.result(), 0.5, kTol);
  acc.reset_state();
  acc.update_state(y_true, y_pred, floats({0.7f, 0.3f}, {2}));
  EXPECT_NEAR(acc.result(), 0.3, kTol);
}

TEST(SparseCategoricalAccuracy, LabelsAgainstArgmax) {
  // Keras's docstring: labels [2, 1] vs argmax [1, 1] -> 1 / 2; weighted [0.7, 0.3] -> 0.3.
  Tensor y_pred = floats({0.1f, 0.6f, 0.3f, 0.05f, 0.95f, 0}, {2, 3});
  SparseCategoricalAccuracy acc;
  EXPECT_EQ(acc.name(), "sparse_categorical_accuracy");
  acc.update_state(floats({2, 1}, {2, 1}), y_pred);
  EXPECT_NEAR(acc.result(), 0.5, kTol);
  acc.reset_state();
  acc.update_state(int64s({2, 1}, {2}), y_pred, floats({0.7f, 0.3f}, {2}));
  EXPECT_NEAR(acc.result(), 0.3, kTol);
}

TEST(SparseCategoricalAccuracy, AccumulatesOverBatchesAndSequences) {
  SparseCategoricalAccuracy acc;
  // Batch 1: logits [2, 3 classes]: argmax [0, 2], labels [0, 1] -> 1 of 2.
  acc.update_state(int64s({0, 1}, {2}), floats({5, 1, 0, 0, 1, 2}, {2, 3}));
  // Batch 2: argmax [1, 1, 2], labels [1, 1, 2] -> 3 of 3.
  acc.update_state(int64s({1, 1, 2}, {3}), floats({0, 9, 1, 0, 2, 1, 0, 0, 1}, {3, 3}));
  EXPECT_NEAR(acc.result(), 4.0 / 5, kTol);
  // Tokens [batch 1, time 4]: each sample's matches are averaged over time first, then samples.
  SparseCategoricalAccuracy tokens;
  Tensor logits = floats({1, 0, 1, 0, 0, 1, 0, 1}, {1, 4, 2});  // argmax [0, 0, 1, 1]
  tokens.update_state(int64s({0, 1, 1, 1}, {1, 4}), logits);
  EXPECT_NEAR(tokens.result(), 0.75, kTol);
}

TEST(SparseCategoricalAccuracy, TiesPickTheFirstClass) {
  expect_values(sparse_categorical_accuracy(int64s({0, 1}, {2}), floats({3, 3, 3, 2, 2, 2}, {2, 3})), {1, 0}, kTol);
}

TEST(TopKCategoricalAccuracy, TargetAmongTheKLargest) {
  // Keras's docstring with k = 1: -> 1 / 2; weighted [0.7, 0.3] -> 0.3.
  Tensor y_true = floats({0, 0, 1, 0, 1, 0}, {2, 3});
  Tensor y_pred = floats({0.1f, 0.9f, 0.8f, 0.05f, 0.95f, 0}, {2, 3});
  TopKCategoricalAccuracy top1({.k = 1});
  top1.update_state(y_true, y_pred);
  EXPECT_NEAR(top1.result(), 0.5, kTol);
  top1.reset_state();
  top1.update_state(y_true, y_pred, floats({0.7f, 0.3f}, {2}));
  EXPECT_NEAR(top1.result(), 0.3, kTol);
  // k = 2: class 2 (0.8) is second in row 0 -> both rows match.
  expect_values(top_k_categorical_accuracy(y_true, y_pred, 2), {1, 1}, kTol);
  TopKCategoricalAccuracy top5;
  EXPECT_EQ(top5.name(), "top_k_categorical_accuracy");
}

TEST(SparseTopKCategoricalAccuracy, LabelAmongTheKLargest) {
  // Keras's docstring with k = 1: labels [2, 1] -> 1 / 2; weighted [0.7, 0.3] -> 0.3.
  Tensor y_pred = floats({0.1f, 0.9f, 0.8f, 0.05f, 0.95f, 0}, {2, 3});
  SparseTopKCategoricalAccuracy top1({.k = 1});
  top1.update_state(int64s({2, 1}, {2}), y_pred);
  EXPECT_NEAR(top1.result(), 0.5, kTol);
  top1.reset_state();
  top1.update_state(int64s({2, 1}, {2}), y_pred, floats({0.7f, 0.3f}, {2}));
  EXPECT_NEAR(top1.result(), 0.3, kTol);
  // Scores [0.4, 0.3, 0.2, 0.1]: label 2 is third, in the top 3 but not the top 2.
  Tensor row = floats({0.4f, 0.3f, 0.2f, 0.1f}, {1, 4});
  expect_values(sparse_top_k_categorical_accuracy(int64s({2}, {1}), row, 2), {0}, kTol);
  expect_values(sparse_top_k_categorical_accuracy(int64s({2}, {1}), row, 3), {1}, kTol);
  // Ties at the boundary count in: [0.5, 0.5, 0.1] with k = 1 puts both 0 and 1 in the top 1.
  expect_values(
      sparse_top_k_categorical_accuracy(int64s({0, 1}, {2}), floats({0.5f, 0.5f, 0.1f, 0.5f, 0.5f, 0.1f}, {2, 3}), 1),
      {1, 1}, kTol);
  // The default k is 5: with 6 classes the smallest score misses.
  SparseTopKCategoricalAccuracy top5;
  EXPECT_EQ(top5.name(), "sparse_top_k_categorical_accuracy");
  top5.update_state(int64s({0, 5}, {2}), floats({1, 2, 3, 4, 5, 6, 6, 5, 4, 3, 2, 1}, {2, 6}));
  EXPECT_NEAR(top5.result(), 0.0, kTol);
}

TEST(AccuracyErrors, ShapeMismatchNamesTheMetricAndBothShapes) {
  SparseCategoricalAccuracy sparse;
  std::string m = error_message<ShapeError>([&] { sparse.update_state(int64s({1, 2, 0}, {3}), Tensor::ones({4, 5})); });
  EXPECT_TRUE(contains(m, "[sparse_categorical_accuracy]")) << m;
  EXPECT_TRUE(contains(m, "y_true is [3]")) << m;
  EXPECT_TRUE(contains(m, "y_pred is [4,5]")) << m;

  CategoricalAccuracy categorical({.name = "accuracy"});
  m = error_message<ShapeError>([&] { categorical.update_state(Tensor::ones({2, 4}), Tensor::ones({2, 3})); });
  EXPECT_TRUE(contains(m, "[accuracy] y_true is [2,4] and y_pred is [2,3]")) << m;

  m = error_message<ShapeError>([] { BinaryAccuracy().update_state(Tensor::ones({3}), Tensor::ones({4})); });
  EXPECT_TRUE(contains(m, "[binary_accuracy] y_true is [3] and y_pred is [4]")) << m;

  EXPECT_TRUE(contains(error_message<ValueError>([] { TopKCategoricalAccuracy({.k = 0}); }), "k is 0"));
  EXPECT_TRUE(
      contains(error_message<ValueError>([] { Accuracy().update_state(Tensor(), Tensor::ones({2})); }), "y_true"));
}

}  // namespace
}  // namespace kestrel::metrics
