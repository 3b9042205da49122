// Optimizer: the base of Keras-style optimizers.
//
//   optimizers::Adam adam({.learning_rate = 1e-3, .global_clipnorm = 1.0});
//   adam.apply(grads, model.trainable_weights());    // one step: clip, decay, update, count
//
// As in Keras 3, each step (1) clips gradients (clipvalue, clipnorm per gradient, global_clipnorm
// over all), (2) applies decoupled weight decay var -= lr * weight_decay * var, (3) runs the
// subclass's update_step per variable, (4) increments iterations. Updates are written with ops,
// so a compiled train step can trace them; each update is a few ops::fused_elementwise programs,
// one pass over memory per updated tensor. A schedule's rate is computed with ops from the step
// counter's tensor, so apply() reads nothing on the host.
//
// With gradient_accumulation_steps = k (Keras 3), apply() adds each call's gradients into a
// "gradient_accumulator" slot per variable and updates only on every k-th call, with the mean of
// the k calls' gradients; clipping and weight decay apply to that mean. The iteration counter
// counts calls; iterations() and the schedules count applied steps (calls / k). The choice is made
// without reading a value on the host, so it compiles into a train step as it is: every call
// computes the update and `where` keeps it on the k-th call and the old values otherwise (a
// branch in the program would need a conditional op; the update is a few passes over the
// parameters, small beside the forward and backward pass it follows).
//
// variables() lists, in Keras 3's order, the iteration count, the learning rate (unless it is a
// schedule), the gradient accumulators (when accumulating) and every slot of the subclass in
// creation order: that order is the checkpoint layout.
//
// get_config() holds the options under Keras's keys; optimizers::serialize and deserialize
// (framework/optimizers/serialization.h) write and read the Keras object a model's compile
// config holds.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "framework/core/handle.h"
#include "framework/core/tensor.h"
#include "framework/core/variable.h"
#include "framework/ops/fused_elementwise.h"
#include "framework/optimizers/learning_rate.h"

namespace kestrel::optimizers {

/// Options every optimizer takes (each optimizer's own options struct repeats these fields).
struct CommonOptions {
  LearningRate learning_rate = 0.001;
  std::optional<double> weight_decay;
  std::optional<double> clipnorm;
  std::optional<double> clipvalue;
  std::optional<double> global_clipnorm;
  std::optional<int> gradient_accumulation_steps;
  std::string name;
};

class Optimizer {
 public:
  Optimizer(std::string default_name, CommonOptions options);
  virtual ~Optimizer() = default;

  /// One step on these variables (the same list every step; slots are created on the first).
  /// Under gradient accumulation, one call of k: the update happens on every k-th. Called by the
  /// replicas of a step that several run side by side, it is their merge point: the gradients
  /// are summed over the replicas in replica order and the variables updated once.
  void apply(const std::vector<Tensor>& gradients, const std::vector<Variable>& variables);

  const std::string& name() const { return name_; }
  /// Steps applied so far (reads the counter on the host: for callbacks and logs, not a traced
  /// step). Under gradient accumulation, calls of apply() / gradient_accumulation_steps.
  std::int64_t iterations() const;
  /// The counter of apply() calls as a variable (an int64 scalar, 0 before the first call; saved
  /// as "iteration"): what a traced step reads instead of iterations(), e.g. to fold the step into
  /// dropout keys, so each accumulated micro-batch draws its own.
  const Variable& iterations_variable() const { return iterations_; }
  /// gradient_accumulation_steps, or 1 when not accumulating.
  int gradient_accumulation_steps() const { return options_.gradient_accumulation_steps.value_or(1); }
  /// The learning rate the next step will use.
  double learning_rate() const;
  /// Sets a constant learning rate (ReduceLROnPlateau, LearningRateScheduler); throws ValueError
  /// when the rate is a schedule.
  void set_learning_rate(double value);
  /// Iteration count, learning rate (unless a schedule), then slots: the checkpoint layout.
  std::vector<Variable> variables() const;
  /// True once slots exist (after the first step, or build()).
  bool built() const { return built_; }
  /// Creates the slots for these variables now (loading a checkpoint needs them before a step).
  void build(const std::vector<Variable>& variables);

  /// The options under Keras's keys (Keras's get_config): name, learning_rate (the rate now, as
  /// Keras reads its variable, or the schedule's Keras object), weight_decay, clipnorm,
  /// global_clipnorm, clipvalue, gradient_accumulation_steps, and Keras's use_ema, ema_momentum,
  /// ema_overwrite_frequency and loss_scale_factor at their defaults (Kestrel has neither a
  /// moving average of the weights nor loss scaling); each class adds its own options.
  virtual nlohmann::json get_config() const;

 protected:
  /// Creates this optimizer's slots for the variables, in order, with add_slot().
  virtual void build_slots(const std::vector<Variable>& variables) = 0;
  /// Updates variables[index] from its gradient. learning_rate is a float32 scalar tensor.
  virtual void update_step(const Tensor& gradient, const Variable& variable, std::size_t index,
                           const Tensor& learning_rate) = 0;
  /// A zero-initialized slot shaped like `reference`, named "<reference path with _>_<slot>".
  Variable add_slot(const Variable& reference, const std::string& slot_name);
  /// The program make() builds, built on the first call for `name` and kept: update programs
  /// take their constants from the options, which never change.
  const ElementwiseProgram& program(std::string_view name, const std::function<ElementwiseProgram()>& make);
  /// The tensor make() computes, computed on the first call for `name` in a step and shared by
  /// the step's other variables: per-step scalars (Adam's bias correction) are computed once.
  const Tensor& per_step(std::string_view name, const std::function<Tensor()>& make);
  /// The steps applied before this one, as an int64 scalar tensor (iterations() without a host
  /// read): what bias corrections and schedules count.
  const Tensor& applied_steps();

 private:
  std::vector<Tensor> clip(const std::vector<Tensor>& gradients) const;
  /// apply() for gradients already summed over the replicas.
  void apply_once(const std::vector<Tensor>& gradients, const std::vector<Variable>& variables);
  /// Clipping, weight decay and update_step for every variable with a gradient.
  void update(const std::vector<Tensor>& gradients, const std::vector<Variable>& variables);
  /// One call of k: accumulates, and updates with the mean on the k-th call (see the top).
  void accumulate_and_update(const std::vector<Tensor>& gradients, const std::vector<Variable>& variables);

  std::string name_;
  CommonOptions options_;
  Variable iterations_;
  Variable learning_rate_;  // undefined when options_.learning_rate is a schedule
  std::vector<Variable> slots_;
  std::vector<Variable> accumulators_;  // one per variable, in build() order, when accumulating
  std::unordered_map<const void*, std::size_t> index_of_;
  bool built_ = false;
  std::map<std::string, ElementwiseProgram, std::less<>> programs_;
  std::map<std::string, Tensor, std::less<>> per_step_;  // cleared as each step starts
};

/// An optimizer by Keras name ("sgd", "adam", "adamw", "rmsprop") with default options;
/// throws ValueError listing the names for anything else.
Handle<Optimizer> get(std::string_view name);

}  // namespace kestrel::optimizers
