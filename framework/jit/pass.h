// Pass: one graph-to-graph rewrite of the jit compiler, and the pipeline that runs them in order
// (XLA's HloPassPipeline): verify → DCE → CSE → constant folding → algebraic simplification →
// elementwise fusion, then the memory plan (which also places in-place updates: outputs aliased
// to donated inputs).
//
//   jit::PassPipeline pipeline;
//   pipeline.add(std::make_unique<jit::DeadCodeElimination>());
//   pipeline.add(std::make_unique<jit::CommonSubexpressionElimination>());
//   pipeline.run(graph);   // verifies after each pass in debug builds; logs what changed
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

class PassPipeline {
 public:
  void add(std::unique_ptr<Pass> pass) { passes_.push_back(std::move(pass)); }
  /// Runs every pass once, in order. In debug builds the graph is verified after each pass, so a
  /// broken rewrite is caught where it happens.
  void run(Graph& graph) const;
  const std::vector<std::unique_ptr<Pass>>& passes() const { return passes_; }

 private:
  std::vector<std::unique_ptr<Pass>> passes_;
};

}  // namespace kestrel::jit
