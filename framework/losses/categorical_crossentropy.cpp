#include "framework/losses/categorical_crossentropy.h"

#include <string>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/layers/serialization.h"
#include "framework/losses/loss_utils.h"
#include "framework/losses/serialization.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/nn.h"
#include "framework/ops/reduce.h"

namespace kestrel::losses {

CategoricalCrossentropy::CategoricalCrossentropy(CategoricalCrossentropyOptions options)
    : Loss(options.name, options.reduction), options_(std::move(options)) {
  if (!(options_.label_smoothing >= 0.0 && options_.label_smoothing <= 1.0)) {
    throw ValueError(op_message(
        name(), "label_smoothing is " + std::to_string(options_.label_smoothing) + "; it must be in [0, 1]"));
  }
}

Tensor CategoricalCrossentropy::call(const Tensor& y_true, const Tensor& y_pred) const {
  check_defined(name(), y_true, y_pred);
  auto [target, scores] = squeeze_or_expand_to_same_rank(to_float32(y_true), to_float32(y_pred));
  check_same_shape(name(), target, scores);
  const int rank = scores.rank();
  if (rank == 0) {
    throw ShapeError(op_message(name(), "y_pred is a scalar; it must hold class scores, [..., classes]"));
  }
  if (options_.axis < -rank || options_.axis >= rank) {
    throw ShapeError(op_message(
        name(), "axis " + std::to_string(options_.axis) + " is out of range for y_pred " + scores.shape().to_string()));
  }
  const int axis = options_.axis < 0 ? options_.axis + rank : options_.axis;

  if (options_.label_smoothing > 0.0) {
    const double classes = static_cast<double>(scores.shape()[axis]);
    target = target * (1.0 - options_.label_smoothing) + options_.label_smoothing / classes;
  }
  Tensor log_probs;
  if (options_.from_logits) {
    log_probs = ops::log_softmax(scores, axis);
  } else {
    Tensor normalized = scores / ops::sum(scores, {.axes = {axis}, .keepdims = true});
    log_probs = ops::log(clip(normalized, kEpsilon, 1.0 - kEpsilon));
  }
  return -ops::sum(target * log_probs, {.axes = {axis}});
}

nlohmann::json CategoricalCrossentropy::get_config() const {
  nlohmann::json config = Loss::get_config();
  config["from_logits"] = options_.from_logits;
  config["label_smoothing"] = options_.label_smoothing;
  config["axis"] = options_.axis;
  return config;
}

CategoricalCrossentropy CategoricalCrossentropy::from_config(const nlohmann::json& config) {
  using serialization::optional;
  const std::string what = "loss class 'CategoricalCrossentropy'";
  auto o = loss_options_from_config<CategoricalCrossentropyOptions>(config, what,
                                                                    {"from_logits", "label_smoothing", "axis"});
  o.from_logits = optional<bool>(config, "from_logits", o.from_logits, what);
  o.label_smoothing = optional<double>(config, "label_smoothing", o.label_smoothing, what);
  o.axis = optional<int>(config, "axis", o.axis, what);
  return CategoricalCrossentropy(std::move(o));
}

}  // namespace kestrel::losses
