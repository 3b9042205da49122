// MeanSquaredError: mean((y_true - y_pred)^2) over the last axis per sample, as
// keras.losses.MeanSquaredError (and the function keras.losses.mean_squared_error).
//
//   losses::MeanSquaredError loss;
//   Tensor value = loss(targets, predictions);                    // [batch, d] -> scalar
//   Tensor per_sample = losses::mean_squared_error(targets, predictions);   // [batch]
#pragma once

#include <string>
#include <string_view>

#include "framework/losses/loss.h"

namespace kestrel::losses {

/// mean((y_true - y_pred)^2, axis=-1), after Keras's rank alignment; the shapes must then match.
/// `name` is who the errors name (a loss or metric using the function passes its own).
Tensor mean_squared_error(const Tensor& y_true, const Tensor& y_pred, std::string_view name = "mean_squared_error");

struct MeanSquaredErrorOptions {
  Reduction reduction = Reduction::sum_over_batch_size;
  std::string name = "mean_squared_error";
};

class MeanSquaredError : public Loss {
 public:
  explicit MeanSquaredError(MeanSquaredErrorOptions options = {});
  /// mean_squared_error(y_true, y_pred): [batch, d] -> [batch].
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  /// From a config get_config() or Keras wrote (name, reduction).
  static MeanSquaredError from_config(const nlohmann::json& config);
};

}  // namespace kestrel::losses
