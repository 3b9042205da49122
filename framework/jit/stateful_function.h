// jit::StatefulFunction: a compiled function that reads and updates variables — a train step.
//
// Keras's compiled train step is a pure function in disguise: weights, optimizer slots and
// metric state go in, their new values come out. StatefulFunction makes that explicit. While it
// traces, each variable holds a symbolic graph input; whatever the function assigns to it becomes
// a graph output, aliased to that input so the new value can be written over the old buffer.
// After each run the new values are assigned back. Code written against Variables (layers,
// optimizers, metrics) therefore runs unchanged, eagerly or compiled.
//
//   jit::StatefulFunction step(model.weights() + optimizer.variables(), [&](const jit::Args& batch) {
//     ...forward on batch.at("x"), gradients, optimizer.apply(...)...   // assigns variables
//     return std::vector<Tensor>{};                                       // extra outputs, if any
//   }, "train_step");
//   step({{"x", x}, {"y", y}});   // compiles for this signature, runs, assigns the updated variables
//
// The variable list is given at construction; a variable the function assigns besides joins it as
// it traces (state_trace.h). A variable created while tracing (a layer built lazily inside the
// step) would be frozen into the program as a constant, so build models and optimizers before the
// first call.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "framework/core/variable.h"
#include "framework/jit/program_cache.h"
#include "framework/jit/state_trace.h"

namespace kestrel::jit {

class StatefulFunction {
 public:
  using Fn = StateFn;

  /// `state`: the variables the function may read and assign.
  StatefulFunction(std::vector<Variable> state, Fn fn, std::string name);

  /// Runs the program compiled for these arguments (compiling it on a new signature), assigns the
  /// variables it updated, and returns the function's own outputs. `key` joins the signature for
  /// what the arguments' specs do not show (e.g. the replica count).
  std::vector<Tensor> operator()(const Args& args, const std::string& key = "");

  std::int64_t compile_count() const { return programs_.compile_count(); }
  double compile_seconds() const { return programs_.compile_seconds(); }
  const std::string& name() const { return programs_.function_name(); }
  /// The program compiled for a signature, or null (signatures as the compile log prints them).
  const Graph* graph(const std::string& signature) const { return programs_.graph(signature); }
  /// Bytes of the arena this function's programs share (the largest plan so far).
  std::int64_t arena_bytes() const { return programs_.arena_bytes(); }
  /// The planned peak bytes of intermediates of the most recently run program (0 before a run).
  std::int64_t planned_bytes() const { return last_planned_bytes_; }

 private:
  Graph trace(const Args& args, const std::string& signature);

  std::vector<Variable> state_;
  Fn fn_;
  ProgramCache programs_;
  struct Program {
    std::size_t state_count = 0;       // its state inputs: state_'s first (variables lifted since come after)
    std::vector<std::size_t> updated;  // the state indices it assigns, in the order of its first outputs
  };
  std::map<std::string, Program> traced_;  // per signature
  std::int64_t last_planned_bytes_ = 0;
};

}  // namespace kestrel::jit
