// Executor: runs a Graph on concrete tensors, one kernel call per op in graph order.
//
//   jit::Executor exec(std::move(graph));
//   std::vector<Tensor> outputs = exec.run({x});   // inputs in graph-input order, specs checked
//
// This first executor allocates each value as it goes; the memory plan (one arena, buffers reused
// by liveness) and fused kernels replace that as the compiler's passes land.
#pragma once

#include <vector>

#include "framework/jit/graph.h"

namespace kestrel::jit {

class Executor {
 public:
  explicit Executor(Graph graph);

  /// Runs the program; throws ShapeError naming the input whose spec differs from the graph's.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  const Graph& graph() const { return graph_; }

 private:
  Graph graph_;
};

}  // namespace kestrel::jit
