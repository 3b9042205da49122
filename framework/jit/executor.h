// Executor: runs a Graph on concrete tensors, one kernel call per op in graph order, with every
// intermediate in one arena laid out by the memory plan.
//
//   jit::Executor exec(std::move(graph));           // plans memory, allocates the arena once
//   std::vector<Tensor> outputs = exec.run({x});    // inputs in graph-input order, specs checked
//   exec.memory_plan().to_string();                 // "arena 1.50 MiB for 41 intermediates (...)"
//
// Allocation: a run allocates only its outputs, each in a fresh buffer that the caller keeps;
// intermediates live in the arena, bfloat16 widening scratch too. (Donating parameter buffers to the
// outputs that replace them, which makes a train step allocation-free, is still to come.)
//
// Threads: one Executor runs one call at a time — concurrent run() calls wait for each other, since
// they would share the arena. Replicas that run side by side each need their own Executor.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "framework/jit/graph.h"
#include "framework/jit/memory_plan.h"

namespace kestrel::jit {

class Executor {
 public:
  explicit Executor(Graph graph);
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  /// Runs the program; throws ShapeError naming the input whose spec differs from the graph's.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  const Graph& graph() const { return graph_; }
  /// Where each value lives; its to_string() is the compile log's memory line.
  const MemoryPlan& memory_plan() const { return plan_; }
  /// The arena's size in bytes: the planned peak of intermediates.
  std::int64_t planned_bytes() const { return plan_.arena_bytes; }

 private:
  void check_inputs(const std::vector<Tensor>& inputs) const;
  void run_node(const Node& node, ValueId id) const;
  void run_widened(const Node& node, ValueId id) const;
  std::vector<Tensor> collect_outputs(const std::vector<Tensor>& inputs) const;

  Graph graph_;
  MemoryPlan plan_;
  std::shared_ptr<Buffer> arena_;
  std::vector<ValueId> output_roots_;  // values that get a fresh buffer each run

  // Per-run state, sized once here so that a run only fills it in; guarded by mutex_.
  mutable std::mutex mutex_;
  mutable std::vector<void*> data_;        // per value: where its data is this run
  mutable std::vector<Tensor> owned_;      // per value: the output buffers made this run
  mutable std::vector<TensorView> operands_;
  mutable std::vector<TensorView> wide_operands_;
};

}  // namespace kestrel::jit
