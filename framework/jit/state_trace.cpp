#include "framework/jit/state_trace.h"

#include <algorithm>

#include "framework/core/error.h"
#include "framework/jit/function.h"
#include "framework/jit/trace.h"

namespace kestrel::jit {
namespace {

// Holds graph inputs in the variables while a trace runs, and puts their values back after it,
// also when tracing throws (a rule-1 error must not leave a model holding symbolic weights).
class StateBinding {
 public:
  explicit StateBinding(const std::vector<Variable>& state) : state_(state) {
    saved_.reserve(state.size());
    for (const Variable& v : state) saved_.push_back(v.value());
  }
  ~StateBinding() {
    for (std::size_t i = 0; i < state_.size(); ++i) state_[i].assign(saved_[i]);
  }
  StateBinding(const StateBinding&) = delete;
  StateBinding& operator=(const StateBinding&) = delete;

 private:
  const std::vector<Variable>& state_;
  std::vector<Tensor> saved_;
};

// Finds the variables a trace assigns beyond its state, and puts their values back when it ends.
class AssignedOutsideState final : public detail::AssignObserver {
 public:
  explicit AssignedOutsideState(const std::vector<Variable>& state) : previous_(detail::assign_observer()) {
    for (const Variable& v : state) known_.push_back(v.id());
    detail::set_assign_observer(this);
  }
  ~AssignedOutsideState() {
    detail::set_assign_observer(previous_);
    for (std::size_t i = 0; i < found_.size(); ++i) found_[i].assign(saved_[i]);
  }
  AssignedOutsideState(const AssignedOutsideState&) = delete;
  AssignedOutsideState& operator=(const AssignedOutsideState&) = delete;

  void before_assign(const Variable& variable) override {
    if (std::find(known_.begin(), known_.end(), variable.id()) != known_.end()) return;
    known_.push_back(variable.id());
    found_.push_back(variable);
    saved_.push_back(variable.value());
  }
  const std::vector<Variable>& found() const { return found_; }

 private:
  detail::AssignObserver* previous_;
  std::vector<const void*> known_;
  std::vector<Variable> found_;
  std::vector<Tensor> saved_;  // their values before the trace
};

StateTrace trace_once(const std::vector<Variable>& state, const Args& args, const StateFn& fn) {
  Trace trace;
  TraceScope active(trace);
  StateBinding binding(state);
  std::vector<ValueId> state_inputs;
  state_inputs.reserve(state.size());
  for (const Variable& v : state) {
    Tensor input = trace.input(v.value().spec(), v.name());
    state_inputs.push_back(input.symbolic()->id);
    v.assign(input);
  }
  Args symbolic_args;
  for (const auto& [arg_name, value] : args) symbolic_args.emplace(arg_name, trace.input(value.spec(), arg_name));
  const std::vector<Tensor> extra = fn(symbolic_args);

  // The variables the function assigned, whose new values become outputs aliased to their inputs.
  StateTrace out;
  std::vector<Tensor> outputs;
  for (std::size_t i = 0; i < state.size(); ++i) {
    const detail::SymbolicValue* now = state[i].value().symbolic();
    if (now != nullptr && now->trace == &trace && now->id == state_inputs[i]) continue;
    out.updated.push_back(i);
    outputs.push_back(state[i].value());
  }
  outputs.insert(outputs.end(), extra.begin(), extra.end());
  out.graph = trace.finish(outputs);
  for (std::size_t k = 0; k < out.updated.size(); ++k) out.graph.alias_output(k, out.updated[k]);
  return out;
}

}  // namespace

StateTrace trace_with_state(std::vector<Variable> state, const Args& args, const StateFn& fn) {
  // Twice at most: a variable found assigned outside the state joins it, and the second trace
  // binds it too (one that creates variables as it runs would keep finding new ones).
  for (int attempt = 0;; ++attempt) {
    std::vector<Variable> lifted;
    StateTrace out;
    {
      AssignedOutsideState watch(state);
      out = trace_once(state, args, fn);
      lifted = watch.found();
    }
    if (lifted.empty()) {
      out.state = std::move(state);
      return out;
    }
    if (attempt > 0) {
      throw JitError("a compiled function assigned variable '" + lifted[0].name() +
                     "', made while it was being traced; make it before the first call (build the optimizer or "
                     "layer that owns it)");
    }
    state.insert(state.end(), lifted.begin(), lifted.end());
  }
}

std::string signature_of_args(const std::string& function, const Args& args, const std::string& key) {
  std::vector<TensorSpec> specs;
  std::vector<std::string> names;
  for (const auto& [arg_name, value] : args) {
    if (!value.defined()) {
      throw ValueError("compiled function '" + function + "': argument '" + arg_name + "' is an undefined tensor");
    }
    specs.push_back(value.spec());
    names.push_back(arg_name);
  }
  std::string signature = signature_of(specs, names);
  if (!key.empty()) signature += (signature.empty() ? "" : ", ") + key;
  return signature;
}

}  // namespace kestrel::jit
