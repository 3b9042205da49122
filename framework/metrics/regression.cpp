#include "framework/metrics/regression.h"

#include "framework/losses/mean_absolute_error.h"
#include "framework/losses/mean_squared_error.h"

namespace kestrel::metrics {

MeanSquaredError::MeanSquaredError(MeanSquaredErrorOptions options)
    : MeanMetricWrapper(
          [who = options.name](const Tensor& t, const Tensor& p) { return losses::mean_squared_error(t, p, who); },
          options.name) {}

MeanAbsoluteError::MeanAbsoluteError(MeanAbsoluteErrorOptions options)
    : MeanMetricWrapper(
          [who = options.name](const Tensor& t, const Tensor& p) { return losses::mean_absolute_error(t, p, who); },
          options.name) {}

}  // namespace kestrel::metrics
