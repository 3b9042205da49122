// Metrics as Keras 3 configs: the keys Keras writes, every class read back with the same options
// (the same JSON and the same results), names kept as Keras's compile config keeps them, and the
// errors for what Kestrel cannot read.
#include "framework/metrics/serialization.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/metrics/metrics.h"
#include "tests/support/error_message.h"
#include "tests/support/tensor_values.h"

namespace kestrel::metrics {
namespace {

using nlohmann::json;
using testing::contains;
using testing::error_message;
using testing::floats;
using testing::kTol;

// serialize -> deserialize gives the same class, the same config and the same result, bit for
// bit; `want` is the result worked out by hand from the options.
template <class M, class Options>
void expect_round_trip(const Options& options, const Tensor& y_true, const Tensor& y_pred, double want) {
  M original(options);
  const json object = serialize(original);
  const std::shared_ptr<Metric> copy = deserialize(json::parse(object.dump()));
  ASSERT_NE(dynamic_cast<M*>(copy.get()), nullptr) << object.dump();
  const Metric& rebuilt = *copy;
  EXPECT_EQ(typeid(rebuilt), typeid(M));
  EXPECT_EQ(serialize(*copy), object);
  EXPECT_EQ(copy->name(), original.name());
  original.update_state(y_true, y_pred);
  copy->update_state(y_true, y_pred);
  EXPECT_EQ(copy->result(), original.result()) << object.dump();
  if (!std::isnan(want)) {
    EXPECT_NEAR(copy->result(), want, kTol) << object.dump();
  }
}

constexpr double kNotByHand = std::numeric_limits<double>::quiet_NaN();

TEST(MetricConfig, AUCWritesKerasKeys) {
  // Kestrel takes the curve and method in any case; Keras writes them as its enums' values.
  const AUC auc(
      {.num_thresholds = 50, .curve = "pr", .summation_method = "Minoring", .from_logits = true, .name = "pr_auc"});
  EXPECT_EQ(serialize(auc), json::parse(R"({
    "module": "keras.metrics", "class_name": "AUC", "registered_name": null,
    "config": {"name": "pr_auc", "dtype": "float32", "num_thresholds": 50, "curve": "PR",
               "summation_method": "minoring", "multi_label": false, "num_labels": null, "label_weights": null,
               "from_logits": true}})"));
}

TEST(MetricConfig, ConfusionAndAccuracyMetricsWriteKerasKeys) {
  // Keras writes its default threshold as null, the thresholds it was given as they were.
  EXPECT_EQ(serialize(Precision()), json::parse(R"({
    "module": "keras.metrics", "class_name": "Precision", "registered_name": null,
    "config": {"name": "precision", "dtype": "float32", "thresholds": null, "top_k": null, "class_id": null}})"));
  EXPECT_EQ(Recall({.thresholds = {0.25, 0.75}, .name = "recall_at"}).get_config(),
            json::parse(R"({"name": "recall_at", "dtype": "float32", "thresholds": [0.25, 0.75], "top_k": null,
                            "class_id": null})"));
  EXPECT_EQ(serialize(BinaryAccuracy({.threshold = 0.25})),
            json::parse(R"({"module": "keras.metrics", "class_name": "BinaryAccuracy", "registered_name": null,
                            "config": {"name": "binary_accuracy", "dtype": "float32", "threshold": 0.25}})"));
  EXPECT_EQ(SparseTopKCategoricalAccuracy({.k = 3}).get_config(),
            json::parse(R"({"name": "sparse_top_k_categorical_accuracy", "dtype": "float32", "k": 3})"));
  EXPECT_EQ(serialize(Mean({.name = "loss"})),
            json::parse(R"({"module": "keras.metrics", "class_name": "Mean", "registered_name": null,
                            "config": {"name": "loss", "dtype": "float32"}})"));
}

TEST(MetricConfig, AccuracyMetricsRoundTrip) {
  expect_round_trip<Accuracy>(AccuracyOptions{.name = "exact"}, floats({1, 2, 3, 4}, {4, 1}),
                              floats({0, 2, 3, 4}, {4, 1}), 0.75);
  // At 0.3 every prediction is right; at the default 0.5 the second would not be.
  expect_round_trip<BinaryAccuracy>(BinaryAccuracyOptions{.threshold = 0.3, .name = "low_bar"},
                                    floats({0, 1, 1, 0}, {4, 1}), floats({0.2f, 0.4f, 0.6f, 0.1f}, {4, 1}), 1.0);
  const Tensor one_hot = floats({0, 0, 1, 0, 1, 0}, {2, 3});
  const Tensor labels = floats({2, 1}, {2});
  const Tensor scores = floats({0.1f, 0.9f, 0.8f, 0.05f, 0.95f, 0.0f}, {2, 3});
  expect_round_trip<CategoricalAccuracy>(CategoricalAccuracyOptions{.name = "cat"}, one_hot, scores, 0.5);
  expect_round_trip<SparseCategoricalAccuracy>(SparseCategoricalAccuracyOptions{.name = "sparse"}, labels, scores, 0.5);
  // With k = 2 both targets are among the top scores; with k = 1 only the second.
  expect_round_trip<TopKCategoricalAccuracy>(TopKCategoricalAccuracyOptions{.k = 2}, one_hot, scores, 1.0);
  expect_round_trip<SparseTopKCategoricalAccuracy>(SparseTopKCategoricalAccuracyOptions{.k = 2, .name = "top2"}, labels,
                                                   scores, 1.0);
}

TEST(MetricConfig, RegressionMetricsAndMeanRoundTrip) {
  const Tensor targets = floats({1.0f, 2.0f, 3.0f, -1.0f}, {2, 2});
  const Tensor predictions = floats({1.5f, 1.0f, 2.0f, 0.0f}, {2, 2});
  // Per sample (0.25 + 1) / 2 and (1 + 1) / 2; (0.5 + 1) / 2 and (1 + 1) / 2.
  expect_round_trip<MeanSquaredError>(MeanSquaredErrorOptions{.name = "mse"}, targets, predictions, 0.8125);
  expect_round_trip<MeanAbsoluteError>(MeanAbsoluteErrorOptions{}, targets, predictions, 0.875);
  expect_round_trip<Mean>(MeanOptions{.name = "average"}, Tensor(), floats({1, 2, 3, 6}, {4}), 3.0);
}

TEST(MetricConfig, ConfusionMetricsRoundTrip) {
  // At 0.3: three predicted positive, two of them positive.
  expect_round_trip<Precision>(PrecisionOptions{.thresholds = {0.3, 0.7}, .name = "precision_at"},
                               floats({1, 0, 1, 0}, {4}), floats({0.4f, 0.5f, 0.8f, 0.2f}, {4}), 2.0 / 3.0);
  // At 0.6: two of the three positives predicted positive.
  expect_round_trip<Recall>(RecallOptions{.thresholds = {0.6}}, floats({1, 0, 1, 1}, {4}),
                            floats({0.4f, 0.5f, 0.8f, 0.7f}, {4}), 2.0 / 3.0);

  const Tensor labels = floats({1, 0, 1, 0, 1, 0}, {6});
  const Tensor logits = floats({2.0f, -1.0f, 0.5f, 0.8f, -0.2f, -3.0f}, {6});
  const AUCOptions options{.num_thresholds = 20, .curve = "PR", .summation_method = "minoring", .from_logits = true};
  expect_round_trip<AUC>(options, labels, logits, kNotByHand);
  // The options came back: the default AUC (ROC, probabilities) gives another area.
  const std::shared_ptr<Metric> copy = deserialize(serialize(AUC(options)));
  AUC defaults;
  copy->update_state(labels, logits);
  defaults.update_state(labels, logits);
  EXPECT_NE(copy->result(), defaults.result());
  EXPECT_EQ(dynamic_cast<const Precision&>(*deserialize(serialize(Precision({.thresholds = {0.3, 0.7}}))))
                .options()
                .thresholds,
            (std::vector<double>{0.3, 0.7}));
}

// Every metric metrics::get knows, and Accuracy, can be written and read back.
TEST(MetricConfig, EveryMetricRoundTrips) {
  std::vector<std::string> all = names();
  all.emplace_back("Accuracy");
  for (const std::string& name : all) {
    const Handle<Metric> metric = get(name);
    const json object = serialize(*metric);
    EXPECT_EQ(object.at("config").at("name"), name);
    EXPECT_EQ(serialize(*deserialize(object)), object) << name;
  }
}

TEST(MetricConfig, ReadsConfigsKerasWrote) {
  const std::shared_ptr<Metric> auc = deserialize(json::parse(R"({
    "module": "keras.metrics", "class_name": "AUC", "registered_name": null,
    "config": {"name": "auc", "dtype": "float32", "num_thresholds": 200, "curve": "ROC",
               "summation_method": "interpolation", "multi_label": false, "num_labels": null,
               "label_weights": null, "from_logits": false}})"));
  EXPECT_EQ(dynamic_cast<const AUC&>(*auc).options().num_thresholds, 200);
  const std::shared_ptr<Metric> precision = deserialize(json::parse(R"({"class_name": "Precision",
      "config": {"name": "precision", "dtype": "float32", "thresholds": 0.7, "top_k": null, "class_id": null}})"));
  EXPECT_EQ(dynamic_cast<const Precision&>(*precision).options().thresholds, std::vector<double>{0.7});
  const std::shared_ptr<Metric> top = deserialize(json::parse(R"({"class_name": "SparseTopKCategoricalAccuracy",
      "config": {"name": "top", "dtype": null, "k": 1, "from_sorted_ids": false}})"));
  EXPECT_EQ(dynamic_cast<const SparseTopKCategoricalAccuracy&>(*top).options().k, 1);
  EXPECT_EQ(top->name(), "top");
}

// Keras's compile config keeps a metric given by name as that string: ["accuracy", {AUC's object}].
TEST(MetricConfig, NamesStayNamesAsInKerasCompileConfigs) {
  const json compiled = json::array({"accuracy", serialize(AUC({.curve = "PR"}))});
  EXPECT_TRUE(compiled[0].is_string());
  const std::shared_ptr<Metric> accuracy = deserialize(compiled[0], "sparse_categorical_crossentropy");
  ASSERT_NE(dynamic_cast<SparseCategoricalAccuracy*>(accuracy.get()), nullptr);
  EXPECT_EQ(accuracy->name(), "accuracy");
  EXPECT_NE(dynamic_cast<BinaryAccuracy*>(deserialize("acc", "binary_crossentropy").get()), nullptr);
  EXPECT_NE(dynamic_cast<Accuracy*>(deserialize("accuracy").get()), nullptr);
  EXPECT_EQ(dynamic_cast<const AUC&>(*deserialize(compiled[1])).options().curve, "PR");
  const std::shared_ptr<Metric> mse = deserialize("mse");
  ASSERT_NE(dynamic_cast<MeanSquaredError*>(mse.get()), nullptr);
  EXPECT_EQ(mse->name(), "mse");  // named by the string, as compile names it
  // Keras writes keras.metrics.mean_absolute_error, a function, this way.
  EXPECT_NE(dynamic_cast<MeanAbsoluteError*>(deserialize(json::parse(R"({"module": "keras.metrics",
      "class_name": "function", "config": "mean_absolute_error", "registered_name": "mean_absolute_error"})"))
                                                 .get()),
            nullptr);
}

void expect_lacking(const char* config, const std::string& what, const std::string& value, const std::string& fix) {
  const std::string m = error_message<ValueError>([&] { deserialize(json::parse(config)); });
  EXPECT_TRUE(contains(m, what)) << m;
  EXPECT_TRUE(contains(m, value)) << m;
  EXPECT_TRUE(contains(m, fix)) << m;
}

TEST(MetricConfigErrors, OptionsKestrelLacksAreNamedWithTheirValues) {
  expect_lacking(R"({"class_name": "Precision", "config": {"top_k": 3}})", "metric class 'Precision'", "top_k is 3",
                 "top_k=None");
  expect_lacking(R"({"class_name": "Recall", "config": {"class_id": 2}})", "metric class 'Recall'", "class_id is 2",
                 "class_id=None");
  expect_lacking(R"({"class_name": "AUC", "config": {"multi_label": true}})", "metric class 'AUC'",
                 "multi_label is true", "multi_label=False");
  expect_lacking(R"({"class_name": "AUC", "config": {"thresholds": [0.1, 0.5]}})", "metric class 'AUC'",
                 "thresholds is [0.1,0.5]", "thresholds=None");
  expect_lacking(R"({"class_name": "AUC", "config": {"label_weights": [1.0, 2.0]}})", "metric class 'AUC'",
                 "label_weights is [1.0,2.0]", "label_weights=None");
  expect_lacking(R"({"class_name": "SparseTopKCategoricalAccuracy", "config": {"from_sorted_ids": true}})",
                 "metric class 'SparseTopKCategoricalAccuracy'", "from_sorted_ids is true", "from_sorted_ids=False");
  expect_lacking(R"({"class_name": "Mean", "config": {"dtype": "float16"}})", "metric class 'Mean'",
                 "dtype is \"float16\"", "float32");
}

TEST(MetricConfigErrors, UnknownKeysAndBadValues) {
  const std::string unknown = error_message<ValueError>(
      [] { deserialize(json::parse(R"({"class_name": "BinaryAccuracy", "config": {"threshhold": 0.4}})")); });
  EXPECT_TRUE(contains(unknown, "metric class 'BinaryAccuracy'")) << unknown;
  EXPECT_TRUE(contains(unknown, "'threshhold' (0.4)")) << unknown;
  const std::string thresholds = error_message<ValueError>(
      [] { deserialize(json::parse(R"({"class_name": "Precision", "config": {"thresholds": "high"}})")); });
  EXPECT_TRUE(contains(thresholds, "metric class 'Precision'")) << thresholds;
  EXPECT_TRUE(contains(thresholds, "thresholds is \"high\"")) << thresholds;
  const std::string k = error_message<ValueError>(
      [] { deserialize(json::parse(R"({"class_name": "TopKCategoricalAccuracy", "config": {"k": "five"}})")); });
  EXPECT_TRUE(contains(k, "metric class 'TopKCategoricalAccuracy'")) << k;
  EXPECT_TRUE(contains(k, "'k'")) << k;
  // Keras's third curve is one Kestrel does not draw: the constructor says so.
  const std::string curve = error_message<ValueError>(
      [] { deserialize(json::parse(R"({"class_name": "AUC", "config": {"curve": "PRGAIN"}})")); });
  EXPECT_TRUE(contains(curve, "curve is 'PRGAIN'")) << curve;
}

TEST(MetricConfigErrors, UnknownClassListsKestrels) {
  const std::string m = error_message<ValueError>([] { deserialize(json::parse(R"({"class_name": "F1Score"})")); });
  EXPECT_TRUE(contains(m, "[metrics::deserialize]")) << m;
  EXPECT_TRUE(contains(m, "unknown metric class 'F1Score'")) << m;
  EXPECT_TRUE(contains(m, "AUC, Precision, Recall, Mean")) << m;
  const std::string bare = error_message<ValueError>([] { deserialize("f1_score"); });
  EXPECT_TRUE(contains(bare, "[metrics::get]")) << bare;
}

// A registered class of the user's own only shares the built-in one's name.
TEST(MetricConfigErrors, UsersRegisteredClassIsNotTheBuiltInOne) {
  const std::string m = error_message<ValueError>([] {
    deserialize(json::parse(R"({"module": "my_pkg", "class_name": "AUC", "registered_name": "my_pkg>AUC"})"));
  });
  EXPECT_TRUE(contains(m, "[metrics::deserialize]")) << m;
  EXPECT_TRUE(contains(m, "'AUC' is registered as 'my_pkg>AUC'")) << m;
}

TEST(MetricConfigErrors, WrappersOfOnesOwnFunctionHaveNoKerasConfig) {
  const MeanMetricWrapper hits([](const Tensor& /*y_true*/, const Tensor& y_pred) { return y_pred; }, "hits");
  const std::string m = error_message<ValueError>([&] { serialize(hits); });
  EXPECT_TRUE(contains(m, "[metrics::serialize]")) << m;
  EXPECT_TRUE(contains(m, "metric 'hits'")) << m;
  EXPECT_TRUE(contains(m, "of a class of its own")) << m;
}

}  // namespace
}  // namespace kestrel::metrics
