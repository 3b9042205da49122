// What Model::compile takes, with Keras's names and defaults.
//
//   model.compile({.optimizer = optimizers::Adam({.learning_rate = 1e-3}),
//                  .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
//                  .metrics = {"accuracy"}});
//   model.compile({.optimizer = "adam", .loss = "mse"});      // Keras's strings work too
#pragma once

#include <string>
#include <vector>

#include "framework/losses/loss.h"
#include "framework/metrics/metric.h"
#include "framework/optimizers/optimizer.h"

namespace kestrel {

/// An optimizer object, or a Keras name ("adam").
class OptimizerArg : public Handle<optimizers::Optimizer> {
 public:
  using Handle::Handle;
  // NOLINTNEXTLINE(google-explicit-constructor): compile takes optimizer, loss and metrics by name, as Keras does
  OptimizerArg(const char* name) : Handle(optimizers::get(name)) {}
  // NOLINTNEXTLINE(google-explicit-constructor): compile takes optimizer, loss and metrics by name, as Keras does
  OptimizerArg(const std::string& name) : Handle(optimizers::get(name)) {}
};

/// A loss object, or a Keras name ("sparse_categorical_crossentropy").
class LossArg : public Handle<losses::Loss> {
 public:
  using Handle::Handle;
  // NOLINTNEXTLINE(google-explicit-constructor): compile takes optimizer, loss and metrics by name, as Keras does
  LossArg(const char* name) : Handle(losses::get(name)) {}
  // NOLINTNEXTLINE(google-explicit-constructor): compile takes optimizer, loss and metrics by name, as Keras does
  LossArg(const std::string& name) : Handle(losses::get(name)) {}
};

/// A metric object, or a Keras name ("accuracy"), resolved against the loss at compile time.
class MetricArg : public Handle<metrics::Metric> {
 public:
  using Handle::Handle;
  // NOLINTNEXTLINE(google-explicit-constructor): compile takes optimizer, loss and metrics by name, as Keras does
  MetricArg(const char* name) : name_(name) {}
  // NOLINTNEXTLINE(google-explicit-constructor): compile takes optimizer, loss and metrics by name, as Keras does
  MetricArg(const std::string& name) : name_(name) {}
  /// The Keras name, when given by name (resolution waits for the loss).
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

struct CompileOptions {
  OptimizerArg optimizer = "rmsprop";
  LossArg loss = {};
  std::vector<MetricArg> metrics = {};
  /// Compile the whole train step into one program (the jit); false runs op by op.
  bool jit_compile = false;
  /// Steps run per call of the compiled program (and between callback batch hooks).
  int steps_per_execution = 1;
  /// Force eager execution even when jit_compile is set (debugging).
  bool run_eagerly = false;
  /// Metrics that take sample weights into account (plain metrics ignore them, as in Keras).
  std::vector<MetricArg> weighted_metrics = {};
};

}  // namespace kestrel
