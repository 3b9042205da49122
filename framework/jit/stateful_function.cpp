#include "framework/jit/stateful_function.h"

#include "framework/core/error.h"

namespace kestrel::jit {

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
  const std::string signature = signature_of_args(name(), args, key);
  const Executor& program = programs_.get(signature, [&] { return trace(args, signature); });
  last_planned_bytes_ = program.planned_bytes();
  const std::vector<std::size_t>& updated = traced_.at(signature).updated;
  const std::size_t state_count = traced_.at(signature).state_count;

  // A variable's buffer can take its new value in place when nothing else holds it: then the
  // step allocates nothing. A value the user still holds (a Tensor from value()) keeps its data.
  // (Asked before the inputs below take their own handles.)
  std::vector<bool> donated(state_count + args.size(), false);
  for (std::size_t i : updated) donated[i] = state_[i].value().is_sole_owner();
  std::vector<Tensor> inputs;
  inputs.reserve(state_count + args.size());
  for (std::size_t i = 0; i < state_count; ++i) inputs.push_back(state_[i].value());
  for (const auto& entry : args) inputs.push_back(entry.second);

  std::vector<Tensor> outputs = program.run(inputs, donated);
  inputs.clear();  // drop the old values before the new ones are assigned
  for (std::size_t k = 0; k < updated.size(); ++k) state_[updated[k]].assign(outputs[k]);
  return {outputs.begin() + static_cast<std::ptrdiff_t>(updated.size()), outputs.end()};
}

Graph StatefulFunction::trace(const Args& args, const std::string& signature) {
  StateTrace traced = trace_with_state(state_, args, fn_);
  state_ = std::move(traced.state);
  traced_[signature] = {.state_count = state_.size(), .updated = std::move(traced.updated)};
  return std::move(traced.graph);
}

}  // namespace kestrel::jit
