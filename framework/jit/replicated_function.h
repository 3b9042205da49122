// jit::ReplicatedFunction: a step compiled for every replica of a strategy — the SPMD program XLA
// runs on every TPU core, merge points included — or, with no strategy, for the one replica of the
// default strategy: Keras's compiled train step.
//
// A step is a pure function in disguise: weights, optimizer slots and metric state go in, their
// new values come out. While the function traces, each state variable holds a symbolic graph
// input; what it assigns to one becomes a graph output aliased to that input, so the new value
// can be written over the old buffer (state_trace.h). After each run the new values are assigned
// back. Code written against Variables (layers, optimizers, metrics) runs unchanged, eagerly or
// compiled.
//
//   jit::ReplicatedFunction step(state, [&](const jit::Args& batch) {
//     model.train_step(batch_of(batch));   // optimizer.apply, the loss tracker, the metrics
//     return std::vector<Tensor>{};         // extra outputs, if any
//   }, "train_step");
//   step({{"x", x}, {"y", y}});   // compiles for this signature, runs, assigns the updated variables
//
// Under a strategy of several replicas the function is a replica's whole step: forward, loss,
// backward, and the merge points where the replicas meet (distribute::merge_call: the optimizer's
// update from the sum of every replica's gradients, the metrics from all their predictions). It is
// traced once per signature, as replica 0 with a symbolic replica id (the argument "replica_id");
// each merge point becomes collective ops of the program (ops/collective.h), and the merge
// function, traced on their results, becomes the program's update of the shared variables.
//
//   jit::ReplicatedFunction step(state, fn, "train_step", strategy);
//   step(shards);   // every replica's step; the shared variables now hold their new values
//
// Running: replicas outnumber cores (8 on 2), and a replica waiting inside a kernel for the others
// would hold a core they need, so nothing waits. The program runs in stages split at its
// collectives (replica_stages.h): a stage's shared part once, then its replica part for every
// replica on the strategy's threads (for_each_replica, kernels serial inside each), then the
// stage's collectives, performed by the strategy's own all_reduce_sum and all_gather in replica
// order (the eager step's merges), then the next stage. A weight gradient's sum, x^T dy summed
// over the replicas, is instead one product over every replica's rows, on every core (staged_run.h):
// the same sum over the global batch's rows, added in the order one replica's step over that
// batch adds them, with no per-replica products to add up. Before the split, the whole step goes
// through replica_step_pipeline (passes/pipeline.h): an embedding's gradient is all-gathered as
// rows and scattered once instead of summed as a table, which adds the same values in another
// order than the eager step's dense sum (equal within float rounding, the same bits run to run).
// Each replica runs on an executor and arena no other running replica holds, all reading the one
// shared copy of the weights; 8 replicas on 2 threads cost one compile and two arenas. A
// variable's new value is written into its old buffer when nothing else holds that buffer, so a
// steady step of one replica allocates only its outputs.
//
// Each replica gets its own device memory check: a program whose largest part does not fit one
// core fails as it compiles. Build models and optimizers before the first call: a variable created
// while tracing would be frozen into the program as a constant.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "framework/distribute/default_distribution.h"
#include "framework/distribute/distribution.h"
#include "framework/jit/profile.h"
#include "framework/jit/program_cache.h"
#include "framework/jit/replica_stages.h"
#include "framework/jit/staged_run.h"
#include "framework/jit/state_trace.h"

namespace kestrel::jit {

/// What each replica's device holds besides the program, and how much memory it has.
struct ReplicaDeviceMemory {
  std::int64_t limit = 0;         ///< bytes per replica (0: unlimited)
  std::string device = "device";  ///< named in the error ("a TPUStrategy replica")
};

class ReplicatedFunction {
 public:
  /// `state`: the variables the step reads and (at merge points) assigns. With a memory limit, a
  /// program that would not fit one replica's device fails as it compiles, with
  /// ResourceExhaustedError giving the figures.
  ReplicatedFunction(std::vector<Variable> state, StateFn fn, std::string name,
                     const distribute::Distribution& distribution = distribute::default_distribution(),
                     ReplicaDeviceMemory memory = {});

  /// Runs the step on each replica's arguments (one per replica in sync, one signature for all),
  /// compiling it first on a new signature, assigns the variables it updated, and returns each
  /// replica's outputs in replica order. The argument "replica_id" is added here (several
  /// replicas). `key` joins the signature for what the arguments' specs do not show.
  std::vector<std::vector<Tensor>> operator()(const std::vector<Args>& per_replica, const std::string& key = "");
  /// The same for a strategy of one replica (the default strategy): its outputs.
  std::vector<Tensor> operator()(const Args& args, const std::string& key = "");

  std::int64_t compile_count() const { return programs_.compile_count(); }
  double compile_seconds() const { return programs_.compile_seconds(); }
  /// Bytes of every arena the replicas ran on (as many as ran at once).
  std::int64_t arena_bytes() const { return programs_.arena_bytes(); }
  /// Bytes of the arena one replica runs on: what each simulated device holds for intermediates.
  std::int64_t arena_bytes_per_replica() const { return programs_.largest_arena_bytes(); }
  /// What one replica's largest compiled part holds live at its peak, by dtype.
  BytesByDtype live_peak_by_dtype_per_replica() const { return programs_.largest_live_peak_by_dtype(); }
  /// The planned peak bytes of one replica's intermediates in the latest program run (its largest part).
  std::int64_t planned_bytes_per_replica() const { return planned_bytes_; }
  const std::string& name() const { return programs_.function_name(); }

 private:
  struct Program {
    ReplicaStages stages;              // the parts' graphs moved to the program cache
    std::size_t state_count = 0;       // its state inputs: state_'s first (variables lifted since come after)
    std::vector<std::size_t> updated;  // the state the step assigns, in the order of its first outputs
    StepBuffers buffers;               // what one call leaves for the next to write into
    std::unique_ptr<ProgramProfiler> collectives_profile;  // when profiling, of a program in stages
  };
  std::vector<Graph> trace(const Args& args, const std::string& signature);
  void check_fits(const std::vector<const Executor*>& parts, const std::string& signature) const;
  /// The replicas this process runs the function on (one argument set each).
  int replicas() const { return distribution_.num_local_replicas(); }

  std::vector<Variable> state_;
  StateFn fn_;
  const distribute::Distribution& distribution_;
  ReplicaDeviceMemory memory_;
  ProgramCache programs_;
  std::map<std::string, Program> traced_;
  std::vector<Tensor> replica_ids_;  // the argument "replica_id" of each replica
  std::int64_t planned_bytes_ = 0;
};

}  // namespace kestrel::jit
