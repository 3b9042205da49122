// The accuracy metrics: the weighted mean of per-sample matches (1 or 0), as Keras's accuracy
// metrics, with their functions (keras.metrics.sparse_categorical_accuracy, ...).
//
//   metrics::SparseCategoricalAccuracy acc;           // integer labels, class scores
//   acc.update_state(labels, logits);                 // labels [batch], logits [batch, classes]
//   acc.result();                                     // fraction whose argmax is the label
//   metrics::BinaryAccuracy bin({.threshold = 0.0});  // a logit > 0 predicts 1
//   metrics::TopKCategoricalAccuracy top5;            // one-hot targets, k = 5
#pragma once

#include <string>

#include "framework/metrics/mean.h"

namespace kestrel::metrics {

/// 1 where y_true == y_pred (after Keras's rank alignment), else 0.
Tensor accuracy(const Tensor& y_true, const Tensor& y_pred);
/// 1 where y_true == (y_pred > threshold), else 0.
Tensor binary_accuracy(const Tensor& y_true, const Tensor& y_pred, double threshold = 0.5);
/// 1 where argmax(y_true) == argmax(y_pred) over the last axis: [..., classes] -> [...].
Tensor categorical_accuracy(const Tensor& y_true, const Tensor& y_pred);
/// 1 where the label y_true ([...] or [..., 1]) == argmax(y_pred) ([..., classes]).
Tensor sparse_categorical_accuracy(const Tensor& y_true, const Tensor& y_pred);
/// 1 where the class argmax(y_true) is among y_pred's k largest scores (ties at the boundary count in).
Tensor top_k_categorical_accuracy(const Tensor& y_true, const Tensor& y_pred, int k = 5);
/// 1 where the label y_true is among y_pred's k largest scores (ties at the boundary count in).
Tensor sparse_top_k_categorical_accuracy(const Tensor& y_true, const Tensor& y_pred, int k = 5);

struct AccuracyOptions {
  std::string name = "accuracy";
};
/// How often predictions equal the targets exactly.
class Accuracy : public MeanMetricWrapper {
 public:
  explicit Accuracy(AccuracyOptions options = {});
  /// From a config get_config() or Keras wrote (name, dtype).
  static Accuracy from_config(const nlohmann::json& config);
};

struct BinaryAccuracyOptions {
  double threshold = 0.5;  ///< y_pred above it predicts 1
  std::string name = "binary_accuracy";
};
/// How often thresholded predictions equal 0/1 targets.
class BinaryAccuracy : public MeanMetricWrapper {
 public:
  explicit BinaryAccuracy(BinaryAccuracyOptions options = {});
  const BinaryAccuracyOptions& options() const { return options_; }
  /// name, dtype, threshold: Keras's keys.
  nlohmann::json get_config() const override;
  /// From a config get_config() or Keras wrote; Keras's defaults fill absent keys.
  static BinaryAccuracy from_config(const nlohmann::json& config);

 private:
  BinaryAccuracyOptions options_;
};

struct CategoricalAccuracyOptions {
  std::string name = "categorical_accuracy";
};
/// How often the predicted class matches a one-hot target's class.
class CategoricalAccuracy : public MeanMetricWrapper {
 public:
  explicit CategoricalAccuracy(CategoricalAccuracyOptions options = {});
  /// From a config get_config() or Keras wrote (name, dtype).
  static CategoricalAccuracy from_config(const nlohmann::json& config);
};

struct SparseCategoricalAccuracyOptions {
  std::string name = "sparse_categorical_accuracy";
};
/// How often the predicted class matches an integer label.
class SparseCategoricalAccuracy : public MeanMetricWrapper {
 public:
  explicit SparseCategoricalAccuracy(SparseCategoricalAccuracyOptions options = {});
  /// From a config get_config() or Keras wrote (name, dtype).
  static SparseCategoricalAccuracy from_config(const nlohmann::json& config);
};

struct TopKCategoricalAccuracyOptions {
  int k = 5;
  std::string name = "top_k_categorical_accuracy";
};
/// How often a one-hot target's class is among the k highest scores. Throws ValueError for k < 1.
class TopKCategoricalAccuracy : public MeanMetricWrapper {
 public:
  explicit TopKCategoricalAccuracy(TopKCategoricalAccuracyOptions options = {});
  const TopKCategoricalAccuracyOptions& options() const { return options_; }
  /// name, dtype, k: Keras's keys.
  nlohmann::json get_config() const override;
  /// From a config get_config() or Keras wrote; Keras's defaults fill absent keys.
  static TopKCategoricalAccuracy from_config(const nlohmann::json& config);

 private:
  TopKCategoricalAccuracyOptions options_;
};

struct SparseTopKCategoricalAccuracyOptions {
  int k = 5;
  std::string name = "sparse_top_k_categorical_accuracy";
};
/// How often an integer label is among the k highest scores. Throws ValueError for k < 1.
class SparseTopKCategoricalAccuracy : public MeanMetricWrapper {
 public:
  explicit SparseTopKCategoricalAccuracy(SparseTopKCategoricalAccuracyOptions options = {});
  const SparseTopKCategoricalAccuracyOptions& options() const { return options_; }
  /// name, dtype, k: Keras's keys.
  nlohmann::json get_config() const override;
  /// From a config get_config() or Keras wrote; Keras's defaults fill absent keys.
  static SparseTopKCategoricalAccuracy from_config(const nlohmann::json& config);

 private:
  SparseTopKCategoricalAccuracyOptions options_;
};

}  // namespace kestrel::metrics
