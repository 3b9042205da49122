#include "framework/metrics/accuracy.h"

#include <limits>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/layers/serialization.h"
#include "framework/losses/loss_utils.h"
#include "framework/losses/serialization.h"
#include "framework/metrics/serialization.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::metrics {
namespace {

using losses::check_defined;
using losses::check_same_shape;
using losses::to_float32;

Tensor as_matches(const Tensor& condition) { return ops::cast(condition, DType::float32); }

void check_has_classes(std::string_view who, const Tensor& y_pred) {
  if (y_pred.rank() == 0 || y_pred.shape()[-1] == 0) {
    throw ShapeError(op_message(who, "y_pred is " + y_pred.shape().to_string() +
                                         "; it must hold class scores, [..., classes] with at least one class"));
  }
}

void check_k(std::string_view who, int k) {
  if (k < 1) throw ValueError(op_message(who, "k is " + std::to_string(k) + "; it must be at least 1"));
}

/// Labels shaped like y_pred without its class axis (a trailing size-1 axis is dropped first).
Tensor sparse_labels(std::string_view who, const Tensor& y_true, const Tensor& y_pred) {
  check_has_classes(who, y_pred);
  Tensor labels = y_true;
  if (labels.rank() == y_pred.rank() && labels.shape()[-1] == 1) labels = ops::squeeze(labels, {-1});
  Shape want;
  for (int d = 0; d + 1 < y_pred.rank(); ++d) want.push_back(y_pred.shape()[d]);
  if (labels.shape() != want) {
    throw ShapeError(op_message(who, "y_true is " + y_true.shape().to_string() + " and y_pred is " +
                                         y_pred.shape().to_string() + ": y_true must be " + want.to_string() +
                                         " (y_pred's shape without the class axis), optionally with a trailing 1"));
  }
  return labels;
}

/// 1 where scores[..., label] is among the k largest of its row: fewer than k scores beat it
/// (Keras's in_top_k, where a NaN score at the label never counts as large).
Tensor in_top_k(const Tensor& labels, const Tensor& scores, int k) {
  const Tensor lowest = ops::scalar_like(scores, -std::numeric_limits<double>::infinity());
  Tensor is_label = ops::one_hot(ops::cast(labels, DType::int64), scores.shape()[-1], {.dtype = DType::bool_});
  Tensor at_label = ops::max(ops::where(is_label, scores, lowest), {.axes = {-1}, .keepdims = true});
  at_label = ops::where(ops::not_equal(at_label, at_label), lowest, at_label);
  Tensor beaten_by = ops::sum(as_matches(ops::greater(scores, at_label)), {.axes = {-1}});
  return as_matches(ops::less(beaten_by, ops::scalar_like(beaten_by, static_cast<double>(k))));
}

Tensor accuracy_of(std::string_view who, const Tensor& y_true, const Tensor& y_pred) {
  check_defined(who, y_true, y_pred);
  auto [t, p] = losses::squeeze_or_expand_to_same_rank(ops::cast(y_true, y_pred.dtype()), y_pred);
  check_same_shape(who, t, p);
  return as_matches(ops::equal(t, p));
}

Tensor binary_accuracy_of(std::string_view who, const Tensor& y_true, const Tensor& y_pred, double threshold) {
  check_defined(who, y_true, y_pred);
  auto [t, p] = losses::squeeze_or_expand_to_same_rank(to_float32(y_true), to_float32(y_pred));
  check_same_shape(who, t, p);
  return as_matches(ops::equal(t, as_matches(ops::greater(p, ops::scalar_like(p, threshold)))));
}

Tensor categorical_accuracy_of(std::string_view who, const Tensor& y_true, const Tensor& y_pred) {
  check_defined(who, y_true, y_pred);
  check_same_shape(who, y_true, y_pred);
  check_has_classes(who, y_pred);
  return as_matches(ops::equal(ops::argmax(to_float32(y_true)), ops::argmax(y_pred)));
}

Tensor sparse_categorical_accuracy_of(std::string_view who, const Tensor& y_true, const Tensor& y_pred) {
  check_defined(who, y_true, y_pred);
  // Compared as floats, as Keras does, so float labels holding class indices work too.
  Tensor labels = to_float32(sparse_labels(who, y_true, y_pred));
  return as_matches(ops::equal(labels, to_float32(ops::argmax(y_pred))));
}

Tensor top_k_categorical_accuracy_of(std::string_view who, const Tensor& y_true, const Tensor& y_pred, int k) {
  check_k(who, k);
  check_defined(who, y_true, y_pred);
  check_same_shape(who, y_true, y_pred);
  check_has_classes(who, y_pred);
  return in_top_k(ops::argmax(to_float32(y_true)), to_float32(y_pred), k);
}

Tensor sparse_top_k_categorical_accuracy_of(std::string_view who, const Tensor& y_true, const Tensor& y_pred, int k) {
  check_k(who, k);
  check_defined(who, y_true, y_pred);
  return in_top_k(sparse_labels(who, y_true, y_pred), to_float32(y_pred), k);
}

}  // namespace

Tensor accuracy(const Tensor& y_true, const Tensor& y_pred) { return accuracy_of("accuracy", y_true, y_pred); }
Tensor binary_accuracy(const Tensor& y_true, const Tensor& y_pred, double threshold) {
  return binary_accuracy_of("binary_accuracy", y_true, y_pred, threshold);
}
Tensor categorical_accuracy(const Tensor& y_true, const Tensor& y_pred) {
  return categorical_accuracy_of("categorical_accuracy", y_true, y_pred);
}
Tensor sparse_categorical_accuracy(const Tensor& y_true, const Tensor& y_pred) {
  return sparse_categorical_accuracy_of("sparse_categorical_accuracy", y_true, y_pred);
}
Tensor top_k_categorical_accuracy(const Tensor& y_true, const Tensor& y_pred, int k) {
  return top_k_categorical_accuracy_of("top_k_categorical_accuracy", y_true, y_pred, k);
}
Tensor sparse_top_k_categorical_accuracy(const Tensor& y_true, const Tensor& y_pred, int k) {
  return sparse_top_k_categorical_accuracy_of("sparse_top_k_categorical_accuracy", y_true, y_pred, k);
}

// Each metric's function names the metric itself in its errors (a metric may be renamed, e.g.
// "accuracy" resolved to SparseCategoricalAccuracy).
Accuracy::Accuracy(AccuracyOptions options)
    : MeanMetricWrapper([who = options.name](const Tensor& t, const Tensor& p) { return accuracy_of(who, t, p); },
                        options.name) {}

BinaryAccuracy::BinaryAccuracy(BinaryAccuracyOptions options)
    : MeanMetricWrapper([who = options.name, threshold = options.threshold](
                            const Tensor& t, const Tensor& p) { return binary_accuracy_of(who, t, p, threshold); },
                        options.name),
      options_(options) {}

CategoricalAccuracy::CategoricalAccuracy(CategoricalAccuracyOptions options)
    : MeanMetricWrapper(
          [who = options.name](const Tensor& t, const Tensor& p) { return categorical_accuracy_of(who, t, p); },
          options.name) {}

SparseCategoricalAccuracy::SparseCategoricalAccuracy(SparseCategoricalAccuracyOptions options)
    : MeanMetricWrapper(
          [who = options.name](const Tensor& t, const Tensor& p) { return sparse_categorical_accuracy_of(who, t, p); },
          options.name) {}

TopKCategoricalAccuracy::TopKCategoricalAccuracy(TopKCategoricalAccuracyOptions options)
    : MeanMetricWrapper([who = options.name, k = options.k](
                            const Tensor& t, const Tensor& p) { return top_k_categorical_accuracy_of(who, t, p, k); },
                        options.name),
      options_(options) {
  check_k(name(), options.k);
}

SparseTopKCategoricalAccuracy::SparseTopKCategoricalAccuracy(SparseTopKCategoricalAccuracyOptions options)
    : MeanMetricWrapper(
          [who = options.name, k = options.k](const Tensor& t, const Tensor& p) {
            return sparse_top_k_categorical_accuracy_of(who, t, p, k);
          },
          options.name),
      options_(options) {
  check_k(name(), options.k);
}

Accuracy Accuracy::from_config(const nlohmann::json& config) {
  return Accuracy(metric_options_from_config<AccuracyOptions>(config, "metric class 'Accuracy'", {}));
}

nlohmann::json BinaryAccuracy::get_config() const {
  nlohmann::json config = Metric::get_config();
  config["threshold"] = options_.threshold;
  return config;
}

BinaryAccuracy BinaryAccuracy::from_config(const nlohmann::json& config) {
  const std::string what = "metric class 'BinaryAccuracy'";
  auto o = metric_options_from_config<BinaryAccuracyOptions>(config, what, {"threshold"});
  o.threshold = serialization::optional<double>(config, "threshold", o.threshold, what);
  return BinaryAccuracy(std::move(o));
}

CategoricalAccuracy CategoricalAccuracy::from_config(const nlohmann::json& config) {
  return CategoricalAccuracy(
      metric_options_from_config<CategoricalAccuracyOptions>(config, "metric class 'CategoricalAccuracy'", {}));
}

SparseCategoricalAccuracy SparseCategoricalAccuracy::from_config(const nlohmann::json& config) {
  return SparseCategoricalAccuracy(metric_options_from_config<SparseCategoricalAccuracyOptions>(
      config, "metric class 'SparseCategoricalAccuracy'", {}));
}

nlohmann::json TopKCategoricalAccuracy::get_config() const {
  nlohmann::json config = Metric::get_config();
  config["k"] = options_.k;
  return config;
}

TopKCategoricalAccuracy TopKCategoricalAccuracy::from_config(const nlohmann::json& config) {
  const std::string what = "metric class 'TopKCategoricalAccuracy'";
  auto o = metric_options_from_config<TopKCategoricalAccuracyOptions>(config, what, {"k"});
  o.k = serialization::optional<int>(config, "k", o.k, what);
  return TopKCategoricalAccuracy(std::move(o));
}

// Keras writes from_sorted_ids only when it is true.
nlohmann::json SparseTopKCategoricalAccuracy::get_config() const {
  nlohmann::json config = Metric::get_config();
  config["k"] = options_.k;
  return config;
}

SparseTopKCategoricalAccuracy SparseTopKCategoricalAccuracy::from_config(const nlohmann::json& config) {
  const std::string what = "metric class 'SparseTopKCategoricalAccuracy'";
  auto o = metric_options_from_config<SparseTopKCategoricalAccuracyOptions>(config, what, {"k", "from_sorted_ids"});
  losses::check_lacking_option(config, what, "from_sorted_ids", false,
                               "Kestrel's SparseTopKCategoricalAccuracy takes class scores, not sorted class ids");
  o.k = serialization::optional<int>(config, "k", o.k, what);
  return SparseTopKCategoricalAccuracy(std::move(o));
}

}  // namespace kestrel::metrics
