#include "framework/metrics/regression.h"

#include <nlohmann/json.hpp>

#include "framework/losses/mean_absolute_error.h"
#include "framework/losses/mean_squared_error.h"
#include "framework/metrics/serialization.h"

namespace kestrel::metrics {

MeanSquaredError::MeanSquaredError(MeanSquaredErrorOptions options)
    : MeanMetricWrapper(
          [who = options.name](const Tensor& t, const Tensor& p) { return losses::mean_squared_error(t, p, who); },
          options.name) {}

MeanAbsoluteError::MeanAbsoluteError(MeanAbsoluteErrorOptions options)
    : MeanMetricWrapper(
          [who = options.name](const Tensor& t, const Tensor& p) { return losses::mean_absolute_error(t, p, who); },
          options.name) {}

MeanSquaredError MeanSquaredError::from_config(const nlohmann::json& config) {
  return MeanSquaredError(
      metric_options_from_config<MeanSquaredErrorOptions>(config, "metric class 'MeanSquaredError'", {}));
}

MeanAbsoluteError MeanAbsoluteError::from_config(const nlohmann::json& config) {
  return MeanAbsoluteError(
      metric_options_from_config<MeanAbsoluteErrorOptions>(config, "metric class 'MeanAbsoluteError'", {}));
}

}  // namespace kestrel::metrics
