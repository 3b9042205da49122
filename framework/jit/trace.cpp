#include "framework/jit/trace.h"

#include "framework/core/error.h"

namespace kestrel::jit {
namespace {
thread_local Trace* current = nullptr;
}  // namespace

Trace* active_trace() { return current; }

TraceScope::TraceScope(Trace& trace) {
  if (current != nullptr) {
    throw JitError("a jit trace is already running on this thread; a traced function cannot trace another one");
  }
  current = &trace;
}

TraceScope::~TraceScope() { current = nullptr; }

LayerScope::LayerScope(const std::string& name, const std::string& class_name) : trace_(current) {
  if (trace_ != nullptr) trace_->push_scope(name, class_name);
}

LayerScope::~LayerScope() {
  if (trace_ != nullptr) trace_->pop_scope();
}

Tensor Trace::symbolic(ValueId id, const TensorSpec& spec, std::string origin, bool requires_grad) {
  auto impl = std::make_shared<detail::TensorImpl>();
  impl->spec = spec;
  impl->requires_grad = requires_grad;
  impl->symbolic = std::make_shared<const detail::SymbolicValue>(detail::SymbolicValue{this, id, std::move(origin)});
  return Tensor(std::move(impl));
}

std::string Trace::scope_path() const {
  std::string out;
  for (const Scope& s : scopes_) {
    if (!out.empty()) out += '/';
    out += s.name;
  }
  return out;
}

Tensor Trace::input(const TensorSpec& spec, std::string name, bool requires_grad) {
  const ValueId id = graph_.add_input(spec, name);
  return symbolic(id, spec, "input '" + name + "'", requires_grad);
}

ValueId Trace::value_of(const Tensor& tensor) {
  if (const detail::SymbolicValue* s = tensor.symbolic()) {
    if (s->trace != this) {
      throw JitError("a traced tensor (" + s->origin +
                     ") from another trace was used here; values of one compiled "
                     "step cannot flow into another: pass them as inputs");
    }
    return s->id;
  }
  auto found = constants_.find(tensor.id());
  if (found != constants_.end()) return found->second;
  const ValueId id = graph_.add_constant(tensor);
  constants_.emplace(tensor.id(), id);
  captured_.push_back(tensor);
  return id;
}

Tensor Trace::record(std::shared_ptr<const Primitive> primitive, const std::vector<Tensor>& inputs,
                     const TensorSpec& spec) {
  std::vector<ValueId> ids;
  ids.reserve(inputs.size());
  for (const Tensor& t : inputs) ids.push_back(value_of(t));
  const std::string scope = scope_path();
  std::string origin = "op '" + std::string(primitive->name()) + "'";
  if (!scopes_.empty()) origin += " in layer '" + scopes_.back().name + "' (" + scopes_.back().class_name + ")";
  const ValueId id = graph_.add_op(std::move(primitive), std::move(ids), spec, scope);
  return symbolic(id, spec, std::move(origin), false);
}

Graph Trace::finish(const std::vector<Tensor>& outputs) {
  for (const Tensor& t : outputs) graph_.add_output(value_of(t));
  return std::move(graph_);
}

}  // namespace kestrel::jit
