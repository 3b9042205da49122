// What Model::compile takes, with Keras's names and defaults.
//
//   model.compile({.optimizer = optimizers::Adam({.learning_rate = 1e-3}),
//                  .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
//                  .metrics = {"accuracy"}});
//   model.compile({.optimizer = "adam", .loss = "mse"});      // Keras's strings work too
//
// A model of several outputs takes a loss and metrics per output, by output name, as Keras's
// dicts do; a single loss applies to every output:
//
//   model.compile({.optimizer = "adam",
//                  .loss = {{"digit", "sparse_categorical_crossentropy"}, {"size", "mse"}},
//                  .loss_weights = {{"size", 0.5}},
//                  .metrics = {{"digit", {"accuracy"}}}});
#pragma once

#include <concepts>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
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

/// One value for the whole model (every output), or one per output name: how compile takes a
/// model's losses and metrics (Keras's plain value or dict).
template <class T>
class PerOutput {
 public:
  PerOutput() = default;
  /// The value for every output.
  template <class V>
  requires std::constructible_from<T, V&&> &&(!std::same_as<std::remove_cvref_t<V>, PerOutput>)
      // NOLINTNEXTLINE(google-explicit-constructor): compile takes one value as Keras does
      PerOutput(V&& value)
      : all_(std::forward<V>(value)) {}
  /// A list of metrics for every output: .metrics = {"accuracy", "mae"}.
  template <class E = T>
  requires requires {
    typename E::value_type;
  } && std::same_as<E, std::vector<typename E::value_type>> PerOutput(
      std::initializer_list<typename E::value_type> values)
      : all_(values) {
  }
  /// Values by output name: .loss = {{"digit", "sparse_categorical_crossentropy"}, {"size", "mse"}}.
  PerOutput(std::initializer_list<std::pair<const std::string, T>> by_output) : by_output_(by_output) {}
  // NOLINTNEXTLINE(google-explicit-constructor): compile takes a map by output as Keras takes a dict
  PerOutput(std::map<std::string, T> by_output) : by_output_(std::move(by_output)) {}

  /// True when values are given per output name.
  bool by_output() const { return !by_output_.empty(); }
  /// The value for every output (meaningful when !by_output()).
  const T& all() const { return all_; }
  /// The values by output name (meaningful when by_output()).
  const std::map<std::string, T>& per_output() const { return by_output_; }

 private:
  T all_{};
  std::map<std::string, T> by_output_;
};

struct CompileOptions {
  OptimizerArg optimizer = "rmsprop";
  /// One loss, or one per output name for a model of several outputs (an output left out has no
  /// loss, as Keras's None).
  PerOutput<LossArg> loss = {};
  /// How much each output's loss weighs in the total, by output name (1 for those not listed).
  std::map<std::string, double> loss_weights = {};
  /// Metrics for the model's output, or per output name for a model of several outputs.
  PerOutput<std::vector<MetricArg>> metrics = {};
  /// Compile the whole train step into one program (the jit); false runs op by op.
  bool jit_compile = false;
  /// Steps run per call of the compiled program (and between callback batch hooks).
  int steps_per_execution = 1;
  /// Force eager execution even when jit_compile is set (debugging).
  bool run_eagerly = false;
  /// Metrics that take sample weights into account (plain metrics ignore them, as in Keras).
  PerOutput<std::vector<MetricArg>> weighted_metrics = {};
};

}  // namespace kestrel
