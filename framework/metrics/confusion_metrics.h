// Precision, Recall and AUC: metrics built on confusion-matrix counts at decision thresholds,
// as keras.metrics.Precision, Recall and AUC.
//
//   metrics::Precision precision;                        // a prediction above 0.5 is positive
//   precision.update_state(labels, probabilities);       // labels 0/1, shaped like the predictions
//   metrics::AUC auc({.curve = "PR", .from_logits = true});
//   auc.update_state(labels, logits);
//   auc.result();                                        // area under the precision-recall curve
//
// Counts are weighted by sample_weight and kept per threshold in float32 vectors, so batches
// (and replicas) add up.
#pragma once

#include <string>
#include <vector>

#include "framework/metrics/metric.h"

namespace kestrel::metrics {

struct PrecisionOptions {
  /// A prediction above a threshold is positive at that threshold; each must be in [0, 1].
  std::vector<double> thresholds = {0.5};
  std::string name = "precision";
};

/// tp / (tp + fp): how many predicted positives are positive.
class Precision : public Metric {
 public:
  /// Throws ValueError for no thresholds or one outside [0, 1].
  explicit Precision(PrecisionOptions options = {});
  const PrecisionOptions& options() const { return options_; }
  /// name, dtype, thresholds (null for the default 0.5, as Keras writes it), and Keras's top_k
  /// and class_id as null: Kestrel counts every prediction.
  nlohmann::json get_config() const override;
  /// From a config get_config() or Keras wrote; a top_k or class_id is a ValueError.
  static Precision from_config(const nlohmann::json& config);
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = Tensor()) override;
  /// Precision at the first threshold (0 while nothing was predicted positive).
  double result() const override;
  /// Precision at every threshold.
  std::vector<double> results() const;
  void reset_state() override;
  /// {true_positives, false_positives}: float32 [thresholds], named "<name>/true_positives", ...
  std::vector<Variable> variables() const override;

 private:
  PrecisionOptions options_;
  Tensor thresholds_;
  Variable true_positives_;
  Variable false_positives_;
};

struct RecallOptions {
  /// A prediction above a threshold is positive at that threshold; each must be in [0, 1].
  std::vector<double> thresholds = {0.5};
  std::string name = "recall";
};

/// tp / (tp + fn): how many positives are predicted positive.
class Recall : public Metric {
 public:
  /// Throws ValueError for no thresholds or one outside [0, 1].
  explicit Recall(RecallOptions options = {});
  const RecallOptions& options() const { return options_; }
  /// name, dtype, thresholds (null for the default 0.5, as Keras writes it), and Keras's top_k
  /// and class_id as null: Kestrel counts every prediction.
  nlohmann::json get_config() const override;
  /// From a config get_config() or Keras wrote; a top_k or class_id is a ValueError.
  static Recall from_config(const nlohmann::json& config);
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = Tensor()) override;
  /// Recall at the first threshold (0 while no positive was seen).
  double result() const override;
  /// Recall at every threshold.
  std::vector<double> results() const;
  void reset_state() override;
  /// {true_positives, false_negatives}: float32 [thresholds], named "<name>/true_positives", ...
  std::vector<Variable> variables() const override;

 private:
  RecallOptions options_;
  Tensor thresholds_;
  Variable true_positives_;
  Variable false_negatives_;
};

struct AUCOptions {
  /// Thresholds evenly spaced over [0, 1] (the end ones nudged by 1e-7 past 0 and 1); more is finer.
  int num_thresholds = 200;
  /// "ROC" (true positive rate over false positive rate) or "PR" (precision over recall).
  std::string curve = "ROC";
  /// "interpolation" (trapezoids; for PR, Davis & Goadrich's interpolation), "minoring" or "majoring".
  std::string summation_method = "interpolation";
  /// true: y_pred are logits, passed through a sigmoid first.
  bool from_logits = false;
  std::string name = "auc";
};

/// The area under the ROC or PR curve, from counts at num_thresholds thresholds.
class AUC : public Metric {
 public:
  /// Throws ValueError for num_thresholds < 2 or an unknown curve or summation_method.
  explicit AUC(AUCOptions options = {});
  const AUCOptions& options() const { return options_; }
  /// name, dtype, num_thresholds, curve ("ROC" or "PR"), summation_method, from_logits, and
  /// Keras's multi_label, num_labels and label_weights at their defaults (Kestrel's AUC is single-label).
  nlohmann::json get_config() const override;
  /// From a config get_config() or Keras wrote; multi-label options and explicit thresholds are a
  /// ValueError.
  static AUC from_config(const nlohmann::json& config);
  /// Predictions are clipped to [0, 1]; labels count as positive when nonzero.
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = Tensor()) override;
  double result() const override;
  void reset_state() override;
  /// {true_positives, false_positives, true_negatives, false_negatives}: float32 [num_thresholds].
  std::vector<Variable> variables() const override;

 private:
  enum class Curve { roc, pr };
  enum class Summation { interpolation, minoring, majoring };

  double interpolated_pr_auc(const std::vector<double>& tp, const std::vector<double>& fp,
                             const std::vector<double>& fn) const;

  AUCOptions options_;
  int num_thresholds_;
  Curve curve_;
  Summation summation_;
  bool from_logits_;
  Tensor suffix_sum_;  // [T, T]: x @ suffix_sum_ sums each row from every threshold to the last
  Variable true_positives_;
  Variable false_positives_;
  Variable true_negatives_;
  Variable false_negatives_;
};

}  // namespace kestrel::metrics
