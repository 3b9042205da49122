// Metric: the base of Keras-style stateful metrics.
//
//   metrics::SparseCategoricalAccuracy acc;
//   acc.update_state(labels, logits);
//   acc.result();       // 0.8431
//   acc.reset_state();
//
// State lives in non-trainable Variables (variables()), so it can be saved and, under a
// distribution strategy, combined across replicas.
//
// get_config() holds a metric's options under Keras's keys; metrics::serialize and deserialize
// (framework/metrics/serialization.h) write and read the Keras object a compile config holds.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "framework/core/handle.h"
#include "framework/core/tensor.h"
#include "framework/core/variable.h"

namespace kestrel::metrics {

class Metric {
 public:
  explicit Metric(std::string name) : name_(std::move(name)) {}
  virtual ~Metric() = default;

  /// Accumulates a batch; sample_weight (optional) weighs each sample.
  virtual void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = Tensor()) = 0;
  /// The metric over everything accumulated since the last reset.
  virtual double result() const = 0;
  virtual void reset_state() = 0;
  /// The state variables.
  virtual std::vector<Variable> variables() const = 0;

  const std::string& name() const { return name_; }
  /// The options under Keras's keys (Keras's get_config): name, and dtype "float32" (Kestrel's
  /// metrics compute in float32 under every policy); each class adds its own.
  virtual nlohmann::json get_config() const;

 private:
  std::string name_;
};

/// A metric by Keras name: "accuracy"/"acc" resolves, as Keras does, by the loss in use
/// (sparse, categorical or binary accuracy); also "mean_squared_error"/"mse", "mae", "auc",
/// "precision", "recall", ... Throws ValueError listing the names for anything else.
Handle<Metric> get(std::string_view name, std::string_view loss_name = "");
/// The canonical name of every metric get() knows, "accuracy" first (for listings, and tests
/// that must cover every metric).
std::vector<std::string> names();

}  // namespace kestrel::metrics
