#include "framework/metrics/mean.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "framework/autodiff/recording.h"
#include "framework/core/error.h"
#include "framework/losses/loss_utils.h"
#include "framework/metrics/serialization.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::metrics {
namespace {

/// Axes [from, rank).
std::vector<int> axes_from(int from, int rank) {
  std::vector<int> axes(static_cast<std::size_t>(std::max(0, rank - from)));
  std::iota(axes.begin(), axes.end(), from);
  return axes;
}

}  // namespace

Mean::Mean(MeanOptions options)
    : Metric(options.name),
      total_(options.name + "/total", Tensor::scalar(0.0), /*trainable=*/false),
      count_(options.name + "/count", Tensor::scalar(0.0), /*trainable=*/false) {}

Mean Mean::from_config(const nlohmann::json& config) {
  return Mean(metric_options_from_config<MeanOptions>(config, "metric class 'Mean'", {}));
}

void Mean::add_values(const Tensor& values, const Tensor& sample_weight) {
  if (!values.defined()) throw ValueError(op_message(name(), "values is an undefined tensor"));
  autodiff::NoGradScope no_grad;
  Tensor v = losses::to_float32(values);
  Tensor count;
  // Keras's reduce_to_samplewise_values: average each sample down to the weights' rank, weigh
  // it, and count the weights.
  if (sample_weight.defined()) {
    auto [aligned, w] = losses::squeeze_or_expand_to_same_rank(v, losses::to_float32(sample_weight));
    v = aligned;
    if (v.rank() > w.rank()) v = ops::mean(v, {.axes = axes_from(w.rank(), v.rank())});
    bool fits = w.rank() <= v.rank();
    for (int d = 1; fits && d <= w.rank(); ++d) fits = w.shape()[-d] == 1 || w.shape()[-d] == v.shape()[-d];
    if (!fits) {
      throw ShapeError(op_message(name(), "sample_weight is " + sample_weight.shape().to_string() +
                                              " and the values are " + values.shape().to_string() +
                                              ": sample_weight must broadcast to the values"));
    }
    w = ops::broadcast_to(w, v.shape());
    v = v * w;
    if (w.rank() > 1) w = ops::mean(w, {.axes = axes_from(1, w.rank())});
    count = ops::sum(w);
  } else {
    count = Tensor::scalar(v.rank() >= 1 ? static_cast<double>(v.shape()[0]) : 1.0);
  }
  if (v.rank() > 1) v = ops::mean(v, {.axes = axes_from(1, v.rank())});
  total_.assign(total_.value() + ops::sum(v));
  count_.assign(count_.value() + count);
}

void Mean::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  add_values(y_pred, sample_weight);
}

double Mean::result() const {
  const double count = count_.value().item();
  return count == 0.0 ? 0.0 : total_.value().item() / count;
}

void Mean::reset_state() {
  total_.assign(Tensor::scalar(0.0));
  count_.assign(Tensor::scalar(0.0));
}

std::vector<Variable> Mean::variables() const { return {total_, count_}; }

MeanMetricWrapper::MeanMetricWrapper(MetricFunction fn, std::string name)
    : Mean({.name = std::move(name)}), fn_(std::move(fn)) {
  if (!fn_) throw ValueError(op_message(this->name(), "MeanMetricWrapper needs a function; it was given none"));
}

void MeanMetricWrapper::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  autodiff::NoGradScope no_grad;
  losses::check_defined(name(), y_true, y_pred);
  add_values(fn_(y_true, y_pred), sample_weight);
}

}  // namespace kestrel::metrics
