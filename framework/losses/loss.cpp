// Loss::operator(): weighting, masking and reduction, as keras.losses.Loss.__call__.
#include "framework/losses/loss.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/losses/loss_utils.h"
#include "framework/losses/serialization.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"

namespace kestrel::losses {

Tensor Loss::operator()(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) const {
  check_defined(name_, y_true, y_pred);
  Tensor values = to_float32(call(y_true, y_pred));
  if (sample_weight.defined()) values = values * broadcast_sample_weight(name_, sample_weight, values.shape());

  Tensor mask = this->mask(y_true, y_pred);
  if (mask.defined()) {
    mask = to_float32(mask);
    if (mask.shape() != values.shape()) {
      throw ShapeError(op_message(name_, "mask() returned " + mask.shape().to_string() + " but call() returned " +
                                             values.shape().to_string() + "; they must have the same shape"));
    }
    values = values * mask;
  }

  // A scalar from call() is already reduced (Keras returns it as is).
  if (reduction_ == Reduction::none || values.rank() == 0) return values;
  Tensor total = ops::sum(values);
  if (reduction_ == Reduction::sum) return total;
  if (!mask.defined()) {
    return total / static_cast<double>(std::max<std::int64_t>(values.numel(), 1));
  }
  // Masked elements leave the count. With nothing unmasked the total is 0 and so is the loss
  // (Keras's divide_no_nan); the divisor avoids 0 rather than selecting afterwards, so no NaN
  // can reach the gradient.
  Tensor count = ops::sum(mask);
  Tensor zero = ops::scalar_like(count, 0.0);
  Tensor divisor = ops::where(ops::greater(count, zero), count, ops::scalar_like(count, 1.0));
  return total / divisor;
}

nlohmann::json Loss::get_config() const { return {{"name", name_}, {"reduction", reduction_name(reduction_)}}; }

}  // namespace kestrel::losses
