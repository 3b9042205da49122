// Executor: runs a Graph on concrete tensors, one kernel call per op in graph order, with every
// intermediate in one arena laid out by the memory plan.
//
//   jit::Executor exec(std::move(graph));           // plans memory, takes its arena once
//   std::vector<Tensor> outputs = exec.run({x});    // inputs in graph-input order, specs checked
//   exec.memory_plan().to_string();                 // "arena 1.50 MiB for 41 intermediates (...)"
//
// Allocation: intermediates live in the arena, bfloat16 widening scratch too; a run allocates only
// its outputs, each in a fresh buffer that the caller keeps. Donation removes those of a train
// step's state: an output aliased to an input (Graph::alias_output) goes into that input's buffer
// when the caller donates it, so a step whose outputs are all state allocates nothing at all.
//
//   std::vector<bool> donated(inputs.size(), false);
//   for (std::size_t i : state) donated[i] = true;       // the caller gives these buffers up
//   std::vector<Tensor> next = exec.run(inputs, donated); // aliased outputs share the donated buffers
//
// A donated input's old value must not be read after the run, through any tensor sharing its
// buffer: the buffer holds the new value (or, if a kernel threw, part of it). An undonated input is
// only read. Where each aliased output is written is in memory_plan().aliases.
//
// Intermediates live in an Arena (arena.h), the program's own or one shared with the other
// programs of a function (ProgramCache shares one), sized for the largest.
//
// Threads: one Executor runs one call at a time — concurrent run() calls wait for each other, as do
// runs of executors sharing an arena. Replicas that run side by side each need their own Executor
// and arena.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "framework/jit/arena.h"
#include "framework/jit/graph.h"
#include "framework/jit/memory_plan.h"

namespace kestrel::jit {

class ProgramProfiler;

class Executor {
 public:
  /// Plans the graph's memory; `arena` is shared with other programs that never run at the same
  /// time (null: an arena of its own). With jit::profiling() on as it is made, every run times
  /// its kernels into the profile of the program called `name` (profile.h).
  explicit Executor(Graph graph, std::shared_ptr<Arena> arena = nullptr, const std::string& name = "program");
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  /// Runs the program; throws ShapeError naming the input whose spec differs from the graph's.
  /// `donated` is empty (nothing donated) or has one flag per input: donated[i] gives input i's
  /// buffer to the run, and the output aliased to input i, if any, is written into it and returned
  /// sharing it; the old value is gone. Throws ValueError naming the input when a donated buffer is
  /// also another input's or a constant of the program. A plain output that is a donated input's old
  /// value is copied out first, into a buffer of its own.
  ///
  /// `reused` (optional, one entry per output, undefined where none) gives buffers back for the
  /// plain outputs: output k is written into (*reused)[k] when that tensor has its spec and
  /// nothing else holds it (last run's output, returned), so a steady run allocates no outputs.
  /// The entries are taken.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const std::vector<bool>& donated = {},
                          std::vector<Tensor>* reused = nullptr) const;
  const Graph& graph() const { return graph_; }
  /// What logs and profiles call the program ("'train_step' #1 part 0 for x: float32[32,784], ...").
  const std::string& name() const { return name_; }
  /// Where each value lives; its to_string() is the compile log's memory line.
  const MemoryPlan& memory_plan() const { return plan_; }
  /// The arena's size in bytes: the planned peak of intermediates.
  std::int64_t planned_bytes() const { return plan_.arena_bytes; }

 private:
  void check_inputs(const std::vector<Tensor>& inputs) const;
  void check_donation(const std::vector<Tensor>& inputs, const std::vector<bool>& donated) const;
  void save_old_values(const std::vector<Tensor>& inputs, const std::vector<bool>& donated) const;
  void place_outputs(const std::vector<bool>& donated, std::vector<Tensor>* reused) const;
  void run_node(const Node& node, ValueId id) const;
  void run_widened(const Node& node, ValueId id) const;
  void write_aliases(const std::vector<bool>& donated) const;
  std::vector<Tensor> collect_outputs(const std::vector<Tensor>& inputs, const std::vector<bool>& donated) const;
  std::byte* arena_at(std::int64_t offset) const;
  /// Points the arena values at the arena's block, grown to this plan first (arena mutex held).
  void bind_arena() const;

  Graph graph_;
  std::string name_;
  MemoryPlan plan_;
  std::shared_ptr<Arena> arena_;
  std::vector<ValueId> output_roots_;           // values that get a fresh buffer each run (unless donated into)
  std::vector<std::int64_t> input_position_;    // per value: its place in graph inputs, or -1
  std::vector<std::int64_t> alias_of_output_;   // per output: its plan_.aliases entry, or -1
  std::vector<std::int64_t> output_of_root_;    // per value: the output whose buffer this output root reuses, or -1
  std::vector<std::int64_t> alias_of_root_;     // per value: the direct/at_end alias it is the root of, or -1
  std::vector<bool> overwritten_when_donated_;  // per input: a donated run writes its buffer
  std::vector<const void*> constant_buffers_;   // sorted, to refuse donating one

  // Per-run state, sized once here so that a run only fills it in; guarded by mutex_.
  mutable std::mutex mutex_;
  mutable std::byte* arena_base_ = nullptr;   // the arena block the values are bound to
  mutable std::vector<void*> data_;           // per value: where its data is this run
  mutable std::vector<Tensor> owned_;         // per value: the output buffers made this run, and copies
                                              // of donated inputs' old values that plain outputs return
  mutable std::vector<Tensor> alias_copies_;  // per alias: its own buffer in a run that did not donate
  mutable std::vector<std::pair<const void*, std::size_t>> input_buffers_;  // donation check scratch
  mutable std::vector<TensorView> operands_;
  mutable std::vector<TensorView> wide_operands_;
  std::unique_ptr<ProgramProfiler> profiler_;  // null unless profiling; its per-run times guarded by mutex_
};

}  // namespace kestrel::jit
