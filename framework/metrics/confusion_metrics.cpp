#include "framework/metrics/confusion_metrics.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "framework/autodiff/recording.h"
#include "framework/core/error.h"
#include "framework/layers/serialization.h"
#include "framework/losses/loss_utils.h"
#include "framework/losses/serialization.h"
#include "framework/metrics/serialization.h"
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

// Keras writes the thresholds it was given, null for its default 0.5.
nlohmann::json thresholds_config(const std::vector<double>& thresholds) {
  if (thresholds == std::vector<double>{0.5}) return nullptr;
  return thresholds;
}

// Keras takes one threshold, a list, or null for 0.5.
std::vector<double> thresholds_from_config(const nlohmann::json& config, const std::string& what) {
  if (!config.contains("thresholds") || config.at("thresholds").is_null()) return {0.5};
  const nlohmann::json& value = config.at("thresholds");
  if (value.is_number()) return {value.get<double>()};
  std::vector<double> out;
  for (const nlohmann::json& t : value.is_array() ? value : nlohmann::json::array({value})) {
    if (!t.is_number()) {
      throw ValueError(what + ": thresholds is " + value.dump() + " in the config; it must be a number, a list of " +
                       "numbers in [0, 1], or null");
    }
    out.push_back(t.get<double>());
  }
  return out;
}

// Precision and Recall share Keras's keys; Kestrel counts every prediction, with no top_k or class_id.
template <class Options>
Options confusion_options_from_config(const nlohmann::json& config, const std::string& what) {
  auto o = metric_options_from_config<Options>(config, what, {"thresholds", "top_k", "class_id"});
  losses::check_lacking_option(config, what, "top_k", nullptr,
                               "Kestrel counts every prediction against the thresholds, not only the top k");
  losses::check_lacking_option(config, what, "class_id", nullptr,
                               "Kestrel counts every class; slice y_true and y_pred to the class instead");
  o.thresholds = thresholds_from_config(config, what);
  return o;
}

nlohmann::json confusion_config(nlohmann::json base, const std::vector<double>& thresholds) {
  base["thresholds"] = thresholds_config(thresholds);
  base["top_k"] = nullptr;
  base["class_id"] = nullptr;
  return base;
}

}  // namespace

Precision::Precision(PrecisionOptions options)
    : Metric(options.name),
      options_(options),
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

nlohmann::json Precision::get_config() const { return confusion_config(Metric::get_config(), options_.thresholds); }

Precision Precision::from_config(const nlohmann::json& config) {
  return Precision(confusion_options_from_config<PrecisionOptions>(config, "metric class 'Precision'"));
}

Recall::Recall(RecallOptions options)
    : Metric(options.name),
      options_(options),
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

nlohmann::json Recall::get_config() const { return confusion_config(Metric::get_config(), options_.thresholds); }

Recall Recall::from_config(const nlohmann::json& config) {
  return Recall(confusion_options_from_config<RecallOptions>(config, "metric class 'Recall'"));
}

AUC::AUC(AUCOptions options)
    : Metric(options.name),
      options_(options),
      num_thresholds_(options.num_thresholds),
      from_logits_(options.from_logits) {
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

nlohmann::json AUC::get_config() const {
  nlohmann::json config = Metric::get_config();
  config["num_thresholds"] = num_thresholds_;
  config["curve"] = curve_ == Curve::roc ? "ROC" : "PR";
  config["summation_method"] = summation_ == Summation::interpolation ? "interpolation"
                               : summation_ == Summation::minoring    ? "minoring"
                                                                      : "majoring";
  config["multi_label"] = false;
  config["num_labels"] = nullptr;
  config["label_weights"] = nullptr;
  config["from_logits"] = from_logits_;
  return config;
}

AUC AUC::from_config(const nlohmann::json& config) {
  using serialization::optional;
  const std::string what = "metric class 'AUC'";
  auto o = metric_options_from_config<AUCOptions>(config, what,
                                                  {"num_thresholds", "curve", "summation_method", "multi_label",
                                                   "num_labels", "label_weights", "from_logits", "thresholds"});
  losses::check_lacking_option(config, what, "multi_label", false,
                               "Kestrel's AUC treats every prediction as one label's, with one curve");
  losses::check_lacking_option(config, what, "num_labels", nullptr, "Kestrel's AUC is single-label");
  losses::check_lacking_option(config, what, "label_weights", nullptr, "Kestrel's AUC is single-label");
  losses::check_lacking_option(config, what, "thresholds", nullptr,
                               "Kestrel's AUC spaces num_thresholds thresholds evenly over [0, 1]");
  o.num_thresholds = optional<int>(config, "num_thresholds", o.num_thresholds, what);
  o.curve = optional<std::string>(config, "curve", o.curve, what);
  o.summation_method = optional<std::string>(config, "summation_method", o.summation_method, what);
  o.from_logits = optional<bool>(config, "from_logits", o.from_logits, what);
  return AUC(std::move(o));
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
