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
//
// A loop's body (ops::scan, jit/scan.h) is traced into a graph of its own by a body trace, made
// inside the trace the loop runs in (or, for a loop run eagerly, on its own):
//   jit::Trace body("scan", jit::active_trace());   // starts in the layer that runs the loop
//   { jit::TraceScope active(body); ... }           // the enclosing trace resumes after
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "framework/jit/graph.h"
#include "framework/ops/recording.h"

namespace kestrel::jit {

class Trace final : public OpRecorder {
 public:
  Trace() = default;
  /// A trace of the body of `loop_op` ("scan"), whose ops run inside `enclosing`, the trace active
  /// when the loop started (null: the loop runs eagerly). It starts in the layer running the loop
  /// (its errors name it), and a value of an enclosing trace used in the body is a JitError saying to
  /// pass it in; so is a tensor that gradients flow to, captured while a GradientTape records.
  Trace(std::string loop_op, const Trace* enclosing);
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  /// A symbolic tensor standing for a new graph input; requires_grad makes it a gradient source.
  Tensor input(const TensorSpec& spec, std::string name, bool requires_grad = false);
  /// Records one op on its inputs (the op dispatcher calls this while the trace is active).
  Tensor record(std::shared_ptr<const Primitive> primitive, const std::vector<Tensor>& inputs,
                const TensorSpec& spec) override;
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
  /// The innermost layer running, as errors name it ("layer 'lstm' (LSTM)"), or "" outside layers.
  std::string layer_description() const;
  /// For a loop body's trace, the trace the loop runs in (null when eager or not a body trace).
  const Trace* enclosing() const { return enclosing_; }

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
  // Loop bodies only: the loop op, the trace it runs in, and whether gradients were being recorded.
  std::string loop_op_;
  const Trace* enclosing_ = nullptr;
  bool records_gradients_ = false;
};

/// The trace active on this thread, or null (the common, eager case).
Trace* active_trace();

/// Makes a trace active on this thread for its lifetime. Traces do not nest (JitError), except a
/// loop body's trace inside its enclosing trace, which is active again afterwards.
class TraceScope {
 public:
  explicit TraceScope(Trace& trace);
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  OpRecorder* previous_;
};

/// Names the layer that runs within its lifetime: on the active trace, or, when none is, for the
/// body traces of loops the layer runs eagerly.
class LayerScope {
 public:
  LayerScope(const std::string& name, const std::string& class_name);
  ~LayerScope();
  LayerScope(const LayerScope&) = delete;
  LayerScope& operator=(const LayerScope&) = delete;

 private:
  Trace* trace_;
  bool eager_;  // no trace was active: the layer went on this thread's eager layer stack
};

}  // namespace kestrel::jit
