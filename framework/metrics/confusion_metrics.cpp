#include "framework/metrics/confusion_metrics.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <string_view>

#include "framework/autodiff/recording.h"
#include "framework/core/error.h"
#include "framework/losses/loss_utils.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/matmul.h"
#include "framework/ops/reduce.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::metrics {
namespace {

using losses::to_float32;

Variable zeros_variable(const std::string& metric, const std::string& state, std::int64_t size) {
  return Variable(metric + "/" + state, Tensor::zeros({size}), /*trainable=*/false);
}

void add_to(const Variable& variable, const Tensor& delta) { variable.assign(variable.value() + delta); }

double divide_no_nan(double a, double b) { return b == 0.0 ? 0.0 : a / b; }

Tensor threshold_tensor(const std::string& who, const std::vector<double>& thresholds) {
  if (thresholds.empty()) throw ValueError(op_message(who, "thresholds is empty; give at least one"));
  std::vector<float> values;
  for (double t : thresholds) {
    if (!(t >= 0.0 && t <= 1.0)) {
      throw ValueError(op_message(who, "threshold " + std::to_string(t) + " is outside [0, 1]"));
    }
    values.push_back(static_cast<float>(t));
  }
  return Tensor::from_vector<float>(values, {static_cast<std::int64_t>(values.size())});
}

/// Predictions, 0/1 labels and weights, aligned as Keras does and flattened to [N].
struct Flat {
  Tensor predictions;
  Tensor positive;  // 1 where the label is nonzero
  Tensor weights;   // sample_weight broadcast to the predictions, or 1
};

Flat flatten(const std::string& who, const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  losses::check_defined(who, y_true, y_pred);
  auto [p, t] = losses::squeeze_or_expand_to_same_rank(to_float32(y_pred), to_float32(y_true));
  losses::check_same_shape(who, t, p);
  Tensor w = sample_weight.defined() ? losses::broadcast_sample_weight(who, sample_weight, p.shape())
                                     : Tensor::ones(p.shape());
  Tensor positive = ops::cast(ops::not_equal(t, ops::scalar_like(t, 0.0)), DType::float32);
  return {ops::reshape(p, {-1}), ops::reshape(positive, {-1}), ops::reshape(w, {-1})};
}

/// Weighted counts at each threshold: a prediction is positive where it exceeds the threshold.
struct Counts {
  Tensor true_positives, false_positives, false_negatives;  // [T]
};

Counts count_at_thresholds(const Flat& flat, const Tensor& thresholds) {
  Tensor predicted = ops::cast(ops::greater(ops::expand_dims(flat.predictions, 1), ops::expand_dims(thresholds, 0)),
                               DType::float32);  // [N, T]
  Tensor positive_weight = ops::expand_dims(flat.positive * flat.weights, 1);
  Tensor negative_weight = ops::expand_dims((1.0 - flat.positive) * flat.weights, 1);
  return {ops::sum(predicted * positive_weight, {.axes = {0}}), ops::sum(predicted * negative_weight, {.axes = {0}}),
          ops::sum((1.0 - predicted) * positive_weight, {.axes = {0}})};
}

std::vector<double> ratio(const Tensor& numerator, const Tensor& other) {
  std::vector<double> n = numerator.to_vector<double>(), o = other.to_vector<double>(), out;
  for (std::size_t i = 0; i < n.size(); ++i) out.push_back(divide_no_nan(n[i], n[i] + o[i]));
  return out;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

Precision::Precision(PrecisionOptions options)
    : Metric(options.name),
      thresholds_(threshold_tensor(options.name, options.thresholds)),
      true_positives_(zeros_variable(options.name, "true_positives", thresholds_.numel())),
      false_positives_(zeros_variable(options.name, "false_positives", thresholds_.numel())) {}

void Precision::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  autodiff::NoGradScope no_grad;
  Counts c = count_at_thresholds(flatten(name(), y_true, y_pred, sample_weight), thresholds_);
  add_to(true_positives_, c.true_positives);
  add_to(false_positives_, c.false_positives);
}

double Precision::result() const { return results()[0]; }
std::vector<double> Precision::results() const { return ratio(true_positives_.value(), false_positives_.value()); }

void Precision::reset_state() {
  true_positives_.assign(Tensor::zeros(true_positives_.shape()));
  false_positives_.assign(Tensor::zeros(false_positives_.shape()));
}

std::vector<Variable> Precision::variables() const { return {true_positives_, false_positives_}; }

Recall::Recall(RecallOptions options)
    : Metric(options.name),
      thresholds_(threshold_tensor(options.name, options.thresholds)),
      true_positives_(zeros_variable(options.name, "true_positives", thresholds_.numel())),
      false_negatives_(zeros_variable(options.name, "false_negatives", thresholds_.numel())) {}

void Recall::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  autodiff::NoGradScope no_grad;
  Counts c = count_at_thresholds(flatten(name(), y_true, y_pred, sample_weight), thresholds_);
  add_to(true_positives_, c.true_positives);
  add_to(false_negatives_, c.false_negatives);
}

double Recall::result() const { return results()[0]; }
std::vector<double> Recall::results() const { return ratio(true_positives_.value(), false_negatives_.value()); }

void Recall::reset_state() {
  true_positives_.assign(Tensor::zeros(true_positives_.shape()));
  false_negatives_.assign(Tensor::zeros(false_negatives_.shape()));
}

std::vector<Variable> Recall::variables() const { return {true_positives_, false_negatives_}; }

AUC::AUC(AUCOptions options)
    : Metric(options.name), num_thresholds_(options.num_thresholds), from_logits_(options.from_logits) {
  if (num_thresholds_ < 2) {
    throw ValueError(
        op_message(name(), "num_thresholds is " + std::to_string(num_thresholds_) + "; it must be at least 2"));
  }
  const std::string curve = lower(options.curve);
  if (curve != "roc" && curve != "pr") {
    throw ValueError(op_message(name(), "curve is '" + options.curve + "'; it must be \"ROC\" or \"PR\""));
  }
  curve_ = curve == "roc" ? Curve::roc : Curve::pr;
  const std::string method = lower(options.summation_method);
  if (method == "interpolation") {
    summation_ = Summation::interpolation;
  } else if (method == "minoring") {
    summation_ = Summation::minoring;
  } else if (method == "majoring") {
    summation_ = Summation::majoring;
  } else {
    throw ValueError(op_message(name(), "summation_method is '" + options.summation_method +
                                            "'; it must be \"interpolation\", \"minoring\" or \"majoring\""));
  }
  const std::int64_t t = num_thresholds_;
  std::vector<float> suffix(static_cast<std::size_t>(t * t), 0.0f);
  for (std::int64_t j = 0; j < t; ++j) {
    for (std::int64_t i = 0; i <= j; ++i) suffix[static_cast<std::size_t>(j * t + i)] = 1.0f;
  }
  suffix_sum_ = Tensor::from_vector<float>(suffix, {t, t});
  true_positives_ = zeros_variable(name(), "true_positives", t);
  false_positives_ = zeros_variable(name(), "false_positives", t);
  true_negatives_ = zeros_variable(name(), "true_negatives", t);
  false_negatives_ = zeros_variable(name(), "false_negatives", t);
}

// Keras's bucketed update for evenly spaced thresholds: O(N + T^2) rather than comparing every
// prediction with every threshold. Threshold i (0 < i < T-1) is i / (T-1), the first is just
// below 0 and the last just above 1, so a prediction p in [0, 1] exceeds thresholds 0 through
// bucket(p) = max(ceil(p * (T-1)) - 1, 0): counting each p in its bucket and summing buckets from
// each threshold upwards gives the positives at every threshold.
void AUC::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  autodiff::NoGradScope no_grad;
  Flat flat = flatten(name(), y_true, y_pred, sample_weight);
  Tensor p = from_logits_ ? ops::sigmoid(flat.predictions) : flat.predictions;
  p = losses::clip(p, 0.0, 1.0);

  const Tensor scaled = p * static_cast<double>(num_thresholds_ - 1);
  const Tensor truncated = ops::cast(ops::cast(scaled, DType::int32), DType::float32);  // floor, as scaled >= 0
  const Tensor ceiling = truncated + ops::cast(ops::greater(scaled, truncated), DType::float32);
  const Tensor bucket = ops::cast(ops::relu(ceiling - 1.0), DType::int32);

  const Tensor true_weight = flat.positive * flat.weights;
  const Tensor false_weight = (1.0 - flat.positive) * flat.weights;
  const std::int64_t n = flat.predictions.numel();
  Tensor per_bucket =
      ops::scatter_add(bucket, ops::concat({ops::reshape(true_weight, {1, n}), ops::reshape(false_weight, {1, n})}, 0),
                       {2, num_thresholds_}, /*axis=*/1);
  Tensor above = ops::matmul(per_bucket, suffix_sum_);  // [2, T]: weight above each threshold
  Tensor tp = ops::reshape(ops::slice(above, {0, 0}, {1, -1}), {num_thresholds_});
  Tensor fp = ops::reshape(ops::slice(above, {1, 0}, {1, -1}), {num_thresholds_});

  add_to(true_positives_, tp);
  add_to(false_positives_, fp);
  add_to(true_negatives_, ops::sum(false_weight) - fp);
  add_to(false_negatives_, ops::sum(true_weight) - tp);
}

// Davis & Goadrich's interpolation between PR points, as Keras: within each interval, TP and
// the predicted positives P vary linearly, so precision = (intercept + slope * P) / P integrates
// in closed form to slope * (dTP + intercept * log(P_a / P_b)), divided by all positives.
double AUC::interpolated_pr_auc(const std::vector<double>& tp, const std::vector<double>& fp,
                                const std::vector<double>& fn) const {
  double area = 0.0;
  for (std::size_t i = 0; i + 1 < tp.size(); ++i) {
    const double p_a = tp[i] + fp[i], p_b = tp[i + 1] + fp[i + 1];
    const double dtp = tp[i] - tp[i + 1];
    const double slope = divide_no_nan(dtp, std::max(p_a - p_b, 0.0));
    const double intercept = tp[i + 1] - slope * p_b;
    const double p_ratio = (p_a > 0.0 && p_b > 0.0) ? divide_no_nan(p_a, std::max(p_b, 0.0)) : 1.0;
    area += divide_no_nan(slope * (dtp + intercept * std::log(p_ratio)), std::max(tp[i + 1] + fn[i + 1], 0.0));
  }
  return area;
}

double AUC::result() const {
  const std::vector<double> tp = true_positives_.value().to_vector<double>();
  const std::vector<double> fp = false_positives_.value().to_vector<double>();
  const std::vector<double> tn = true_negatives_.value().to_vector<double>();
  const std::vector<double> fn = false_negatives_.value().to_vector<double>();
  if (curve_ == Curve::pr && summation_ == Summation::interpolation) return interpolated_pr_auc(tp, fp, fn);

  // Points of the curve, from the lowest threshold (everything positive) to the highest.
  std::vector<double> x, y;
  for (std::size_t i = 0; i < tp.size(); ++i) {
    const double recall = divide_no_nan(tp[i], tp[i] + fn[i]);
    if (curve_ == Curve::roc) {
      x.push_back(divide_no_nan(fp[i], fp[i] + tn[i]));
      y.push_back(recall);
    } else {
      x.push_back(recall);
      y.push_back(divide_no_nan(tp[i], tp[i] + fp[i]));
    }
  }
  double area = 0.0;
  for (std::size_t i = 0; i + 1 < x.size(); ++i) {
    double height = (y[i] + y[i + 1]) / 2.0;
    if (summation_ == Summation::minoring) height = std::min(y[i], y[i + 1]);
    if (summation_ == Summation::majoring) height = std::max(y[i], y[i + 1]);
    area += (x[i] - x[i + 1]) * height;
  }
  return area;
}

void AUC::reset_state() {
  for (const Variable& v : variables()) v.assign(Tensor::zeros(v.shape()));
}

std::vector<Variable> AUC::variables() const {
  return {true_positives_, false_positives_, true_negatives_, false_negatives_};
}

}  // namespace kestrel::metrics
