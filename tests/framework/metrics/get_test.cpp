// metrics::get: "accuracy" resolved against the loss as Keras does, the other Keras names, and
// the error for anything else.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/metrics/metrics.h"
#include "tests/support/error_message.h"

namespace kestrel::metrics {
namespace {

using testing::contains;
using testing::error_message;

template <class M>
void expect_metric(const Handle<Metric>& metric, const std::string& name) {
  ASSERT_TRUE(metric);
  EXPECT_NE(dynamic_cast<M*>(metric.get()), nullptr) << name;
  EXPECT_EQ(metric->name(), name);
}

TEST(MetricsGet, AccuracyResolvesByTheLossAndKeepsItsName) {
  expect_metric<SparseCategoricalAccuracy>(get("accuracy", "sparse_categorical_crossentropy"), "accuracy");
  expect_metric<CategoricalAccuracy>(get("accuracy", "categorical_crossentropy"), "accuracy");
  expect_metric<BinaryAccuracy>(get("accuracy", "binary_crossentropy"), "accuracy");
  expect_metric<Accuracy>(get("accuracy", "mean_squared_error"), "accuracy");
  expect_metric<Accuracy>(get("accuracy"), "accuracy");
  // "acc" resolves the same way and, as Keras logs it, keeps the spelling it was given.
  expect_metric<SparseCategoricalAccuracy>(get("acc", "sparse_categorical_crossentropy"), "acc");
}

TEST(MetricsGet, ResolvedAccuracyMeasuresTheRightThing) {
  // Under sparse categorical crossentropy, labels [2, 1] against class scores: argmax [2, 0].
  Handle<Metric> acc = get("accuracy", "sparse_categorical_crossentropy");
  acc->update_state(Tensor::from_vector<std::int64_t>({2, 1}, {2}),
                    Tensor::from_vector<float>({0, 1, 5, 3, 1, 0}, {2, 3}));
  EXPECT_NEAR(acc->result(), 0.5, 1e-6);
  // Its errors carry the name it is logged under.
  std::string m = error_message<ShapeError>([&] { acc->update_state(Tensor::ones({3}), Tensor::ones({2, 3})); });
  EXPECT_TRUE(contains(m, "[accuracy]")) << m;
}

TEST(MetricsGet, OtherNamesMapToTheirClasses) {
  expect_metric<BinaryAccuracy>(get("binary_accuracy"), "binary_accuracy");
  expect_metric<CategoricalAccuracy>(get("categorical_accuracy"), "categorical_accuracy");
  expect_metric<SparseCategoricalAccuracy>(get("sparse_categorical_accuracy"), "sparse_categorical_accuracy");
  expect_metric<TopKCategoricalAccuracy>(get("top_k_categorical_accuracy"), "top_k_categorical_accuracy");
  expect_metric<SparseTopKCategoricalAccuracy>(get("sparse_top_k_categorical_accuracy"),
                                               "sparse_top_k_categorical_accuracy");
  expect_metric<MeanSquaredError>(get("mean_squared_error"), "mean_squared_error");
  expect_metric<MeanSquaredError>(get("mse"), "mse");
  expect_metric<MeanAbsoluteError>(get("mae"), "mae");
  expect_metric<AUC>(get("auc"), "auc");
  expect_metric<AUC>(get("AUC"), "AUC");
  expect_metric<Precision>(get("precision"), "precision");
  expect_metric<Recall>(get("recall"), "recall");
}

TEST(MetricsGet, EachCallMakesAFreshMetric) {
  Handle<Metric> a = get("mse");
  Handle<Metric> b = get("mse");
  a->update_state(Tensor::ones({2, 1}), Tensor::zeros({2, 1}));
  EXPECT_EQ(b->result(), 0.0);
  EXPECT_FALSE(a->variables()[0].is_same(b->variables()[0]));
}

TEST(MetricsGet, NamesListsEveryMetricOnceByItsCanonicalName) {
  const std::vector<std::string> all = names();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.front(), "accuracy");
  for (const std::string& name : all) {
    EXPECT_EQ(get(name)->name(), name);
    EXPECT_EQ(std::count(all.begin(), all.end(), name), 1) << name;
  }
  EXPECT_EQ(all.size(), 12u);
}

TEST(MetricsGet, UnknownNameListsTheKnownOnes) {
  std::string m = error_message<ValueError>([] { get("f1_score"); });
  EXPECT_TRUE(contains(m, "[metrics::get]")) << m;
  EXPECT_TRUE(contains(m, "'f1_score'")) << m;
  EXPECT_TRUE(contains(m, "accuracy")) << m;
  EXPECT_TRUE(contains(m, "auc")) << m;
}

}  // namespace
}  // namespace kestrel::metrics
