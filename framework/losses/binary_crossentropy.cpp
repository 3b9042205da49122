#include "framework/losses/binary_crossentropy.h"

#include <string>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/layers/serialization.h"
#include "framework/losses/loss_utils.h"
#include "framework/losses/serialization.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"

namespace kestrel::losses {

BinaryCrossentropy::BinaryCrossentropy(BinaryCrossentropyOptions options)
    : Loss(options.name, options.reduction), options_(std::move(options)) {
  if (!(options_.label_smoothing >= 0.0 && options_.label_smoothing <= 1.0)) {
    throw ValueError(op_message(
        name(), "label_smoothing is " + std::to_string(options_.label_smoothing) + "; it must be in [0, 1]"));
  }
}

Tensor BinaryCrossentropy::call(const Tensor& y_true, const Tensor& y_pred) const {
  check_defined(name(), y_true, y_pred);
  auto [target, x] = squeeze_or_expand_to_same_rank(to_float32(y_true), to_float32(y_pred));
  check_same_shape(name(), target, x);
  const int rank = x.rank();
  if (rank == 0 || options_.axis < -rank || options_.axis >= rank) {
    throw ShapeError(op_message(
        name(), "axis " + std::to_string(options_.axis) + " is out of range for y_pred " + x.shape().to_string()));
  }
  if (options_.label_smoothing > 0.0) {
    target = target * (1.0 - options_.label_smoothing) + 0.5 * options_.label_smoothing;
  }
  Tensor elementwise;
  if (options_.from_logits) {
    // -z log sigmoid(x) - (1 - z) log(1 - sigmoid(x)), rewritten so exp never overflows.
    elementwise = ops::relu(x) - x * target + ops::log(1.0 + ops::exp(-ops::abs(x)));
  } else {
    Tensor p = clip(x, kEpsilon, 1.0 - kEpsilon);
    elementwise = -(target * ops::log(p) + (1.0 - target) * ops::log(1.0 - p));
  }
  return ops::mean(elementwise, {.axes = {options_.axis}});
}

nlohmann::json BinaryCrossentropy::get_config() const {
  nlohmann::json config = Loss::get_config();
  config["from_logits"] = options_.from_logits;
  config["label_smoothing"] = options_.label_smoothing;
  config["axis"] = options_.axis;
  return config;
}

BinaryCrossentropy BinaryCrossentropy::from_config(const nlohmann::json& config) {
  using serialization::optional;
  const std::string what = "loss class 'BinaryCrossentropy'";
  auto o =
      loss_options_from_config<BinaryCrossentropyOptions>(config, what, {"from_logits", "label_smoothing", "axis"});
  o.from_logits = optional<bool>(config, "from_logits", o.from_logits, what);
  o.label_smoothing = optional<double>(config, "label_smoothing", o.label_smoothing, what);
  o.axis = optional<int>(config, "axis", o.axis, what);
  return BinaryCrossentropy(std::move(o));
}

}  // namespace kestrel::losses
