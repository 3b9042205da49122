#include "framework/losses/sparse_categorical_crossentropy.h"

#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/layers/serialization.h"
#include "framework/losses/loss_utils.h"
#include "framework/losses/serialization.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/nn.h"
#include "framework/ops/reduce.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::losses {
namespace {

// Without ignore_class every label must be a class: no value can be the op's ignore_index.
constexpr std::int64_t kNoIgnoredLabel = std::numeric_limits<std::int64_t>::min();

int class_axis(const std::string& who, const Tensor& y_pred, int axis) {
  const int rank = y_pred.rank();
  if (rank == 0) {
    throw ShapeError(op_message(
        who, "y_pred is " + y_pred.spec().to_string() + ", a scalar; it must hold class scores, [..., classes]"));
  }
  if (axis < -rank || axis >= rank) {
    throw ShapeError(
        op_message(who, "axis " + std::to_string(axis) + " is out of range for y_pred " + y_pred.shape().to_string()));
  }
  return axis < 0 ? axis + rank : axis;
}

/// y_true as int64 labels shaped like y_pred without the class axis (a trailing size-1 axis is
/// dropped first, as Keras does); throws ShapeError naming both shapes otherwise.
Tensor labels_of(const std::string& who, const Tensor& y_true, const Tensor& y_pred, int axis) {
  Tensor labels = y_true;
  if (labels.rank() == y_pred.rank() && labels.rank() > 0 && labels.shape()[-1] == 1) {
    labels = ops::squeeze(labels, {-1});
  }
  Shape want;
  for (int d = 0; d < y_pred.rank(); ++d) {
    if (d != axis) want.push_back(y_pred.shape()[d]);
  }
  if (labels.shape() != want) {
    throw ShapeError(op_message(who, "y_true is " + y_true.shape().to_string() + " and y_pred is " +
                                         y_pred.shape().to_string() + ": y_true must be " + want.to_string() +
                                         " (y_pred's shape without the class axis), optionally with a trailing 1"));
  }
  return ops::cast(labels, DType::int64);
}

/// y_pred with the class axis moved last, where the fused cross-entropy op wants it.
Tensor classes_last(const Tensor& y_pred, int axis) {
  if (axis == y_pred.rank() - 1) return y_pred;
  std::vector<int> perm;
  for (int d = 0; d < y_pred.rank(); ++d) {
    if (d != axis) perm.push_back(d);
  }
  perm.push_back(axis);
  return ops::transpose(y_pred, perm);
}

Tensor ignored_label(std::int64_t ignore_class) { return Tensor::from_vector<std::int64_t>({ignore_class}, Shape{}); }

// The op's message, without its hint about ignore_index (which the loss calls ignore_class).
std::string op_detail(const std::string& message) {
  const auto hint = message.find("; use a class index");
  return hint == std::string::npos ? message : message.substr(0, hint);
}

}  // namespace

SparseCategoricalCrossentropy::SparseCategoricalCrossentropy(SparseCategoricalCrossentropyOptions options)
    : Loss(options.name, options.reduction), options_(std::move(options)) {}

Tensor SparseCategoricalCrossentropy::call(const Tensor& y_true, const Tensor& y_pred) const {
  check_defined(name(), y_true, y_pred);
  const int axis = class_axis(name(), y_pred, options_.axis);
  Tensor labels = labels_of(name(), y_true, y_pred, axis);
  Tensor scores = classes_last(to_float32(y_pred), axis);

  Tensor valid;
  if (options_.ignore_class) {
    // Ignored positions compute the loss of class 0, then are zeroed: their label may be any value.
    valid = ops::not_equal(labels, ignored_label(*options_.ignore_class));
    labels = ops::where(valid, labels, ops::scalar_like(labels, 0.0));
  }

  // Probabilities take Keras's path: normalize, clip to [eps, 1 - eps], log. The fused op then
  // gives -log p[label] plus the log of the clipped row's sum, which is 0 up to the clipping.
  Tensor log_probs = scores;
  if (!options_.from_logits) {
    Tensor normalized = scores / ops::sum(scores, {.axes = {-1}, .keepdims = true});
    log_probs = ops::log(clip(normalized, kEpsilon, 1.0 - kEpsilon));
  }
  Tensor loss;
  try {
    loss = ops::sparse_softmax_cross_entropy(log_probs, labels, {.ignore_index = kNoIgnoredLabel});
  } catch (const IndexError& e) {
    const std::int64_t classes = scores.shape()[-1];
    throw IndexError(
        op_message(name(), "y_true holds a label outside [0, " + std::to_string(classes) + ") for y_pred " +
                               y_pred.shape().to_string() +
                               (options_.ignore_class ? "" : "; to skip padding labels, set ignore_class") + " (" +
                               op_detail(e.what()) + ")"));
  }
  if (valid.defined()) loss = ops::where(valid, loss, ops::scalar_like(loss, 0.0));
  return loss;
}

Tensor SparseCategoricalCrossentropy::mask(const Tensor& y_true, const Tensor& y_pred) const {
  if (!options_.ignore_class) return Tensor();
  check_defined(name(), y_true, y_pred);
  Tensor labels = labels_of(name(), y_true, y_pred, class_axis(name(), y_pred, options_.axis));
  return ops::cast(ops::not_equal(labels, ignored_label(*options_.ignore_class)), DType::float32);
}

Tensor SparseCategoricalCrossentropy::label_mask(const Tensor& y_true) const {
  if (!options_.ignore_class || !y_true.defined()) return Tensor();
  return ops::cast(ops::not_equal(y_true, ops::scalar_like(y_true, static_cast<double>(*options_.ignore_class))),
                   DType::float32);
}

nlohmann::json SparseCategoricalCrossentropy::get_config() const {
  nlohmann::json config = Loss::get_config();
  config["from_logits"] = options_.from_logits;
  config["ignore_class"] = options_.ignore_class ? nlohmann::json(*options_.ignore_class) : nlohmann::json(nullptr);
  config["axis"] = options_.axis;
  return config;
}

SparseCategoricalCrossentropy SparseCategoricalCrossentropy::from_config(const nlohmann::json& config) {
  using serialization::optional;
  using serialization::required;
  const std::string what = "loss class 'SparseCategoricalCrossentropy'";
  auto o = loss_options_from_config<SparseCategoricalCrossentropyOptions>(config, what,
                                                                          {"from_logits", "ignore_class", "axis"});
  o.from_logits = optional<bool>(config, "from_logits", o.from_logits, what);
  if (config.contains("ignore_class") && !config.at("ignore_class").is_null()) {
    o.ignore_class = required<std::int64_t>(config, "ignore_class", what);
  }
  o.axis = optional<int>(config, "axis", o.axis, what);
  return SparseCategoricalCrossentropy(std::move(o));
}

}  // namespace kestrel::losses
