// Pass: one graph-to-graph rewrite of the jit compiler, and the pipeline that runs them in order
// (XLA's HloPassPipeline): verify → DCE → CSE → constant folding → algebraic simplification →
// elementwise fusion, then the memory plan (which also places in-place updates: outputs aliased
// to donated inputs).
//
//   jit::PassPipeline pipeline;
//   pipeline.add(std::make_unique<jit::DeadCodeElimination>());
//   pipeline.add(std::make_unique<jit::CommonSubexpressionElimination>());
//   pipeline.run(graph);   // verifies after each pass (debug builds, or KESTREL_JIT_VERIFY=1); logs changes
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "framework/jit/graph.h"

namespace kestrel::jit {

class Pass {
 public:
  virtual ~Pass() = default;
  /// Short name for logs and dumps ("dce", "cse", "fusion").
  virtual std::string name() const = 0;
  /// Rewrites the graph; returns true when it changed anything.
  virtual bool run(Graph& graph) = 0;
};

/// True when PassPipeline verifies the graph after every pass: always in debug builds, and in any
/// build with KESTREL_JIT_VERIFY=1 (the test suite runs with it). Read once per process.
bool verify_after_each_pass();

/// What a KESTREL_JIT_VERIFY setting means: unset, "" or "0" off, "1" on; anything else is a
/// ValueError naming the variable.
bool parse_jit_verify_setting(const char* setting);

class PassPipeline {
 public:
  void add(std::unique_ptr<Pass> pass) { passes_.push_back(std::move(pass)); }
  /// Runs every pass once, in order. When verify_after_each_pass(), the graph is verified after
  /// each pass, so a broken rewrite is caught where it happens, with the pass named.
  void run(Graph& graph) const;
  const std::vector<std::unique_ptr<Pass>>& passes() const { return passes_; }

 private:
  std::vector<std::unique_ptr<Pass>> passes_;
};

}  // namespace kestrel::jit
