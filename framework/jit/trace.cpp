#include "framework/jit/trace.h"

#include <utility>

#include "framework/core/error.h"

namespace kestrel::jit {
namespace {
// The layers running eagerly on this thread, (name, class) outermost first: where a loop body
// traced for an eager loop starts, so that its errors name the layer as a compiled step's do.
thread_local std::vector<std::pair<std::string, std::string>> t_eager_layers;
}  // namespace

Trace* active_trace() { return dynamic_cast<Trace*>(kestrel::detail::op_recorder()); }

TraceScope::TraceScope(Trace& trace) : previous_(kestrel::detail::op_recorder()) {
  const bool loop_body = previous_ != nullptr && previous_ == static_cast<const OpRecorder*>(trace.enclosing());
  if (previous_ != nullptr && !loop_body) {
    throw JitError("a jit trace is already running on this thread; a traced function cannot trace another one");
  }
  kestrel::detail::set_op_recorder(&trace);
}

TraceScope::~TraceScope() { kestrel::detail::set_op_recorder(previous_); }

LayerScope::LayerScope(const std::string& name, const std::string& class_name)
    : trace_(active_trace()), eager_(trace_ == nullptr) {
  if (eager_) {
    t_eager_layers.emplace_back(name, class_name);
  } else {
    trace_->push_scope(name, class_name);
  }
}

LayerScope::~LayerScope() {
  if (eager_) {
    t_eager_layers.pop_back();
  } else {
    trace_->pop_scope();
  }
}

Trace::Trace(std::string loop_op, const Trace* enclosing)
    : loop_op_(std::move(loop_op)),
      enclosing_(enclosing),
      records_gradients_(kestrel::detail::gradient_recording_depth() > 0) {
  if (enclosing != nullptr) {
    scopes_ = enclosing->scopes_;
  } else {
    for (const auto& [name, class_name] : t_eager_layers) scopes_.push_back({name, class_name});
  }
}

std::string Trace::layer_description() const {
  if (scopes_.empty()) return {};
  return "layer '" + scopes_.back().name + "' (" + scopes_.back().class_name + ")";
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
  std::string origin = "input '" + name + "'";
  if (!loop_op_.empty()) {
    origin += " of the " + loop_op_ + " body";
    if (!scopes_.empty()) origin += " in " + layer_description();
  }
  return symbolic(id, spec, std::move(origin), requires_grad);
}

ValueId Trace::value_of(const Tensor& tensor) {
  if (const detail::SymbolicValue* s = tensor.symbolic()) {
    bool from_enclosing = false;
    for (const Trace* t = enclosing_; t != nullptr && !from_enclosing; t = t->enclosing_)
      from_enclosing = s->trace == t;
    if (from_enclosing) {
      const std::string where = scopes_.empty() ? "" : " in " + layer_description();
      throw JitError("[" + loop_op_ + "]" + where + ": the loop body uses " + s->origin +
                     ", a value computed outside the loop; a compiled loop's body sees only its operands. Pass "
                     "the tensor to ops::" +
                     loop_op_ + " in ScanArgs::consts and take it from the body's consts argument");
    }
    if (s->trace != this) {
      throw JitError("a traced tensor (" + s->origin +
                     ") from another trace was used here; values of one compiled "
                     "step cannot flow into another: pass them as inputs");
    }
    return s->id;
  }
  auto found = constants_.find(tensor.id());
  if (found != constants_.end()) return found->second;
  if (records_gradients_ && tensor.requires_grad()) {
    const std::string where = scopes_.empty() ? "" : " in " + layer_description();
    throw ValueError("[" + loop_op_ + "]" + where + ": the loop body uses a " + tensor.spec().to_string() +
                     " tensor that gradients flow to (a weight's value?) without taking it as an operand, so its "
                     "gradient would be lost. Pass it to ops::" +
                     loop_op_ + " in ScanArgs::consts and take it from the body's consts argument");
  }
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
