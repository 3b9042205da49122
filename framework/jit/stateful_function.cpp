#include "framework/jit/stateful_function.h"

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

}  // namespace

StatefulFunction::StatefulFunction(std::vector<Variable> state, Fn fn, std::string name)
    : state_(std::move(state)), fn_(std::move(fn)), programs_(std::move(name)) {
  if (!fn_) throw ValueError("jit::StatefulFunction '" + programs_.function_name() + "': the function is empty");
  for (std::size_t i = 0; i < state_.size(); ++i) {
    if (!state_[i].defined()) {
      throw ValueError("jit::StatefulFunction '" + programs_.function_name() + "': state variable " +
                       std::to_string(i) + " is undefined");
    }
  }
}

std::vector<Tensor> StatefulFunction::operator()(const Args& args, const std::string& key) {
  std::vector<TensorSpec> specs;
  std::vector<std::string> names;
  for (const auto& [arg_name, value] : args) {
    if (!value.defined()) {
      throw ValueError("jit::StatefulFunction '" + name() + "': argument '" + arg_name + "' is an undefined tensor");
    }
    specs.push_back(value.spec());
    names.push_back(arg_name);
  }
  std::string signature = signature_of(specs, names);
  if (!key.empty()) signature += (signature.empty() ? "" : ", ") + key;

  const Executor& program = programs_.get(signature, [&] { return trace(args, signature); });
  last_planned_bytes_ = program.planned_bytes();
  const std::vector<std::size_t>& updated = updated_.at(signature);

  // A variable's buffer can take its new value in place when nothing else holds it: then the
  // step allocates nothing. A value the user still holds (a Tensor from value()) keeps its data.
  // (Asked before the inputs below take their own handles.)
  std::vector<bool> donated(state_.size() + args.size(), false);
  for (std::size_t i : updated) donated[i] = state_[i].value().is_sole_owner();
  std::vector<Tensor> inputs;
  inputs.reserve(state_.size() + args.size());
  for (const Variable& v : state_) inputs.push_back(v.value());
  for (const auto& entry : args) inputs.push_back(entry.second);

  std::vector<Tensor> outputs = program.run(inputs, donated);
  inputs.clear();  // drop the old values before the new ones are assigned
  for (std::size_t k = 0; k < updated.size(); ++k) state_[updated[k]].assign(outputs[k]);
  return {outputs.begin() + static_cast<std::ptrdiff_t>(updated.size()), outputs.end()};
}

Graph StatefulFunction::trace(const Args& args, const std::string& signature) {
  Trace trace;
  TraceScope active(trace);
  StateBinding binding(state_);
  std::vector<ValueId> state_inputs;
  state_inputs.reserve(state_.size());
  for (const Variable& v : state_) {
    Tensor input = trace.input(v.value().spec(), v.name());
    state_inputs.push_back(input.symbolic()->id);
    v.assign(input);
  }
  Args symbolic_args;
  for (const auto& [arg_name, value] : args) symbolic_args.emplace(arg_name, trace.input(value.spec(), arg_name));
  const std::vector<Tensor> extra = fn_(symbolic_args);

  // The variables the function assigned, whose new values become outputs aliased to their inputs.
  std::vector<std::size_t> updated;
  std::vector<Tensor> outputs;
  for (std::size_t i = 0; i < state_.size(); ++i) {
    const detail::SymbolicValue* now = state_[i].value().symbolic();
    if (now != nullptr && now->trace == &trace && now->id == state_inputs[i]) continue;
    updated.push_back(i);
    outputs.push_back(state_[i].value());
  }
  outputs.insert(outputs.end(), extra.begin(), extra.end());
  Graph graph = trace.finish(outputs);
  for (std::size_t k = 0; k < updated.size(); ++k) graph.alias_output(k, updated[k]);
  updated_[signature] = std::move(updated);
  return graph;
}

}  // namespace kestrel::jit
