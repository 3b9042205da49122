#include "framework/losses/mean_absolute_error.h"

#include <string>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/losses/loss_utils.h"
#include "framework/losses/serialization.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"

namespace kestrel::losses {

Tensor mean_absolute_error(const Tensor& y_true, const Tensor& y_pred, std::string_view name) {
  check_defined(name, y_true, y_pred);
  auto [target, prediction] = squeeze_or_expand_to_same_rank(to_float32(y_true), to_float32(y_pred));
  check_same_shape(name, target, prediction);
  if (prediction.rank() == 0) {
    throw ShapeError(op_message(name, "y_true and y_pred are scalars; they need a last axis to average over"));
  }
  return ops::mean(ops::abs(target - prediction), {.axes = {-1}});
}

MeanAbsoluteError::MeanAbsoluteError(MeanAbsoluteErrorOptions options) : Loss(options.name, options.reduction) {}

Tensor MeanAbsoluteError::call(const Tensor& y_true, const Tensor& y_pred) const {
  return mean_absolute_error(y_true, y_pred, name());
}

MeanAbsoluteError MeanAbsoluteError::from_config(const nlohmann::json& config) {
  return MeanAbsoluteError(
      loss_options_from_config<MeanAbsoluteErrorOptions>(config, "loss class 'MeanAbsoluteError'", {}));
}

}  // namespace kestrel::losses
