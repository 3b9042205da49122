#include "framework/jit/function.h"

#include "framework/core/error.h"
#include "framework/jit/trace.h"

namespace kestrel::jit {

std::string signature_of(const std::vector<TensorSpec>& specs, const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (i > 0) out += ", ";
    out += (i < names.size() ? names[i] : "input_" + std::to_string(i)) + ": " + specs[i].to_string();
  }
  return out;
}

Function::Function(Fn fn, std::string name, std::vector<std::string> names)
    : fn_(std::move(fn)), names_(std::move(names)), programs_(std::move(name)) {
  if (!fn_) throw ValueError("jit::Function '" + programs_.function_name() + "': the function is empty");
}

std::vector<Tensor> Function::operator()(const std::vector<Tensor>& inputs) {
  std::vector<TensorSpec> specs;
  specs.reserve(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      throw ValueError("jit::Function '" + name() + "': input " + std::to_string(i) + " is an undefined tensor");
    }
    specs.push_back(inputs[i].spec());
  }
  return programs_.get(signature_of(specs, names_), [&] { return trace(inputs); }).run(inputs);
}

Graph Function::trace(const std::vector<Tensor>& inputs) const {
  Trace trace;
  TraceScope active(trace);
  std::vector<Tensor> symbolic;
  symbolic.reserve(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    symbolic.push_back(trace.input(inputs[i].spec(), i < names_.size() ? names_[i] : "input_" + std::to_string(i)));
  }
  return trace.finish(fn_(symbolic));
}

}  // namespace kestrel::jit
