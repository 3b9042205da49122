// Mean: a weighted running mean, and MeanMetricWrapper: the running mean of a per-sample
// function of (y_true, y_pred), as keras.metrics.Mean and keras.metrics.MeanMetricWrapper.
//
//   metrics::Mean loss_tracker({.name = "loss"});
//   loss_tracker.add_values(batch_loss, Tensor::scalar(64));   // weighted by the batch size
//   loss_tracker.result();                                     // sum(value * weight) / sum(weight)
//
//   metrics::MeanMetricWrapper hits([](const Tensor& t, const Tensor& p) { return my_hits(t, p); }, "hits");
//   hits.update_state(y_true, y_pred);
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "framework/metrics/metric.h"

namespace kestrel::metrics {

struct MeanOptions {
  std::string name = "mean";
};

class Mean : public Metric {
 public:
  explicit Mean(MeanOptions options = {});
  /// From a config get_config() or Keras wrote (name, dtype).
  static Mean from_config(const nlohmann::json& config);

  /// Accumulates values, as Keras's Mean.update_state(values, sample_weight): each sample (the
  /// leading axis; a scalar is one sample) is first averaged over its other axes, then weighted
  /// by sample_weight (default 1), which counts that many times in the mean.
  void add_values(const Tensor& values, const Tensor& sample_weight = Tensor());
  /// As a Metric, Mean accumulates y_pred (y_true is not used and may be undefined), so it can
  /// stand wherever a Metric is expected, e.g. as a model's loss tracker.
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = Tensor()) override;
  /// total / count, or 0 before anything was counted.
  double result() const override;
  void reset_state() override;
  /// {total, count}: float32 scalars named "<name>/total" and "<name>/count".
  std::vector<Variable> variables() const override;

 private:
  Variable total_;
  Variable count_;
};

/// fn(y_true, y_pred) -> per-sample values (e.g. 1 for a correct prediction, 0 otherwise).
using MetricFunction = std::function<Tensor(const Tensor& y_true, const Tensor& y_pred)>;

class MeanMetricWrapper : public Mean {
 public:
  MeanMetricWrapper(MetricFunction fn, std::string name);
  /// Accumulates fn(y_true, y_pred), weighted by sample_weight.
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = Tensor()) override;

 private:
  MetricFunction fn_;
};

}  // namespace kestrel::metrics
