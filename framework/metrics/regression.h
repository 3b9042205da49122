// Regression metrics: running means of a per-sample error, as keras.metrics.MeanSquaredError and
// keras.metrics.MeanAbsoluteError (the per-sample errors are the losses' functions).
//
//   metrics::MeanSquaredError mse;
//   mse.update_state(targets, predictions);   // [batch, d]: mean over d per sample, then over samples
//   mse.result();
#pragma once

#include <string>

#include "framework/metrics/mean.h"

namespace kestrel::metrics {

struct MeanSquaredErrorOptions {
  std::string name = "mean_squared_error";
};
/// The weighted mean of losses::mean_squared_error(y_true, y_pred).
class MeanSquaredError : public MeanMetricWrapper {
 public:
  explicit MeanSquaredError(MeanSquaredErrorOptions options = {});
  /// From a config get_config() or Keras wrote (name, dtype).
  static MeanSquaredError from_config(const nlohmann::json& config);
};

struct MeanAbsoluteErrorOptions {
  std::string name = "mean_absolute_error";
};
/// The weighted mean of losses::mean_absolute_error(y_true, y_pred).
class MeanAbsoluteError : public MeanMetricWrapper {
 public:
  explicit MeanAbsoluteError(MeanAbsoluteErrorOptions options = {});
  /// From a config get_config() or Keras wrote (name, dtype).
  static MeanAbsoluteError from_config(const nlohmann::json& config);
};

}  // namespace kestrel::metrics
