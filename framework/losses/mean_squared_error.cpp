#include "framework/losses/mean_squared_error.h"

#include <string>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/losses/loss_utils.h"
#include "framework/losses/serialization.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"

namespace kestrel::losses {

Tensor mean_squared_error(const Tensor& y_true, const Tensor& y_pred, std::string_view name) {
  check_defined(name, y_true, y_pred);
  auto [target, prediction] = squeeze_or_expand_to_same_rank(to_float32(y_true), to_float32(y_pred));
  check_same_shape(name, target, prediction);
  if (prediction.rank() == 0) {
    throw ShapeError(op_message(name, "y_true and y_pred are scalars; they need a last axis to average over"));
  }
  return ops::mean(ops::square(target - prediction), {.axes = {-1}});
}

MeanSquaredError::MeanSquaredError(MeanSquaredErrorOptions options) : Loss(options.name, options.reduction) {}

Tensor MeanSquaredError::call(const Tensor& y_true, const Tensor& y_pred) const {
  return mean_squared_error(y_true, y_pred, name());
}

MeanSquaredError MeanSquaredError::from_config(const nlohmann::json& config) {
  return MeanSquaredError(
      loss_options_from_config<MeanSquaredErrorOptions>(config, "loss class 'MeanSquaredError'", {}));
}

}  // namespace kestrel::losses
