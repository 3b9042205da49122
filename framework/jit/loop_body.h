// LoopBody: the body of a loop op (ops::scan), and how one step of it runs — the C++ step function
// itself when the loop runs eagerly, or the program traced from it when the loop is part of a traced
// step, run by an executor of its own.
//
//   jit::TracedLoopBody traced = jit::trace_loop_body(step, signature, jit::active_trace());
//   auto body = jit::compiled_loop_body(step, traced.signature, std::move(traced.graph));
//   jit::LoopBody::Lease instance = body->acquire();    // one per running loop
//   instance->operands[0] = ...;                         // carry, x slices, consts
//   const std::vector<Tensor>& out = instance->run();   // next carry, then the step's outputs
//
// Tracing checks the TPU rules a loop body lives by: the step keeps each carry's shape and dtype,
// returns defined tensors, and runs no collective; errors name the layer running the loop.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "framework/jit/graph.h"
#include "framework/jit/scan.h"

namespace kestrel::jit {

class Trace;

/// The specs of what a loop body takes and returns at every step.
struct LoopSignature {
  std::vector<TensorSpec> carry;   ///< taken, and returned first
  std::vector<TensorSpec> x;       ///< one slice of each sequence
  std::vector<TensorSpec> consts;  ///< the same every step
  std::vector<TensorSpec> ys;      ///< returned after the carry
  std::size_t num_operands() const { return carry.size() + x.size() + consts.size(); }
  std::size_t num_results() const { return carry.size() + ys.size(); }
};

class LoopBody {
 public:
  /// One running copy of the body, which a loop holds for all its steps: loops running at once
  /// (replicas) each take their own.
  class Instance {
   public:
    virtual ~Instance() = default;
    /// The next step's operands (carry, x slices, consts), for the loop to fill in.
    std::vector<Tensor> operands;
    /// Runs one step on the operands: the next carry, then the step's outputs.
    virtual const std::vector<Tensor>& run() = 0;
  };
  class Lease;

  LoopBody(ops::ScanFunction step, LoopSignature signature);
  virtual ~LoopBody() = default;
  LoopBody(const LoopBody&) = delete;
  LoopBody& operator=(const LoopBody&) = delete;

  /// The step function (what a backward loop differentiates).
  const ops::ScanFunction& step() const { return step_; }
  const LoopSignature& signature() const { return signature_; }
  /// An idle instance, or a new one; it returns to the body when the lease ends.
  Lease acquire() const;
  /// True when the operands must be new tensors every step: a C++ step function may keep them.
  virtual bool keeps_operands() const = 0;
  /// How a step runs, for dumps: "eager" or "a program of 14 ops".
  virtual std::string description() const = 0;

 protected:
  virtual std::unique_ptr<Instance> make_instance() const = 0;

 private:
  ops::ScanFunction step_;
  LoopSignature signature_;
  mutable std::mutex mutex_;
  mutable std::vector<std::unique_ptr<Instance>> idle_;
};

/// An instance of a body, given back to it when destroyed.
class LoopBody::Lease {
 public:
  Lease(const LoopBody& body, std::unique_ptr<Instance> instance) : body_(&body), instance_(std::move(instance)) {}
  ~Lease();
  Lease(Lease&&) = default;
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  Instance* operator->() const { return instance_.get(); }

 private:
  const LoopBody* body_;
  std::unique_ptr<Instance> instance_;
};

/// A step function traced once: its graph (inputs carry, x, consts; outputs carry, ys) and its full
/// signature.
struct TracedLoopBody {
  Graph graph;
  LoopSignature signature;
  /// "layer 'lstm' (LSTM)": the layer running the loop, or "".
  std::string layer;
};

/// Traces `step` on operands of `signature`'s carry, x and consts specs (its ys are filled in)
/// inside `enclosing` (the active trace, or null for an eager loop). Throws JitError / ShapeError /
/// ValueError naming "[scan]" and the layer when the step breaks a rule.
TracedLoopBody trace_loop_body(const ops::ScanFunction& step, LoopSignature signature, const Trace* enclosing);

/// A body whose steps call the C++ function (eager loops).
std::shared_ptr<const LoopBody> eager_loop_body(ops::ScanFunction step, LoopSignature signature);
/// A body whose steps run `graph`, the traced step, after the jit's passes (traced loops).
std::shared_ptr<const LoopBody> compiled_loop_body(ops::ScanFunction step, LoopSignature signature, Graph graph);

}  // namespace kestrel::jit
