// Trace: records the ops a function runs into a Graph instead of running them — the first half of
// jit_compile. While a trace is active on a thread, every op returns a symbolic tensor (a shape and
// a dtype, no data), and reading one in host code throws JitError (rule 1).
//
//   jit::Trace trace;
//   {
//     jit::TraceScope active(trace);
//     Tensor x = trace.input({{32, 784}, DType::float32}, "x");
//     Tensor y = ops::relu(ops::matmul(x, w));     // recorded; w is captured as a constant
//     graph = trace.finish({y});
//   }
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "framework/jit/graph.h"

namespace kestrel::jit {

class Trace {
 public:
  Trace() = default;
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  /// A symbolic tensor standing for a new graph input; requires_grad makes it a gradient source.
  Tensor input(const TensorSpec& spec, std::string name, bool requires_grad = false);
  /// Records one op on its inputs (the op dispatcher calls this while the trace is active).
  Tensor record(std::shared_ptr<const Primitive> primitive, const std::vector<Tensor>& inputs, const TensorSpec& spec);
  /// The graph value of a tensor: its own when it is this trace's, else a captured constant.
  ValueId value_of(const Tensor& tensor);
  /// Marks the outputs and hands over the graph.
  Graph finish(const std::vector<Tensor>& outputs);

  /// The layer now running: its name joins the path recorded on each op ("encoder/dense_1"), and
  /// rule-1 errors name it with its class.
  void push_scope(std::string name, std::string class_name) {
    scopes_.push_back({std::move(name), std::move(class_name)});
  }
  void pop_scope() { scopes_.pop_back(); }

 private:
  Tensor symbolic(ValueId id, const TensorSpec& spec, std::string origin, bool requires_grad);
  std::string scope_path() const;

  Graph graph_;
  std::unordered_map<const void*, ValueId> constants_;  // captured tensors, by identity
  std::vector<Tensor> captured_;                        // keeps captured tensors alive (identity stays valid)
  struct Scope {
    std::string name;
    std::string class_name;
  };
  std::vector<Scope> scopes_;
};

/// The trace active on this thread, or null (the common, eager case).
Trace* active_trace();

/// Makes a trace active on this thread for its lifetime. Traces do not nest (JitError).
class TraceScope {
 public:
  explicit TraceScope(Trace& trace);
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;
};

/// Names the layer that runs within its lifetime, when a trace is active.
class LayerScope {
 public:
  LayerScope(const std::string& name, const std::string& class_name);
  ~LayerScope();
  LayerScope(const LayerScope&) = delete;
  LayerScope& operator=(const LayerScope&) = delete;

 private:
  Trace* trace_;
};

}  // namespace kestrel::jit
