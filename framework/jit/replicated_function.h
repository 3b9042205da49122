// jit::ReplicatedFunction: one program run by several replicas side by side — the SPMD program
// XLA runs on every TPU core. It is traced and compiled once per signature; each replica runs it
// on an executor and arena no other running replica holds, all reading the same variables (the one
// shared copy of the weights). 8 replicas on 2 threads cost one compile and two arenas, not eight
// copies of the model: the simulated cores share the host's memory. Each still gets its own device
// memory check: a program whose plan does not fit one core fails as it compiles.
//
//   jit::ReplicatedFunction gradients(model.weights(), [&](const jit::Args& shard) {
//     return forward_and_backward(shard);            // reads the weights, assigns nothing
//   }, "replica_step");
//   auto outputs = gradients(shards, [&](const auto& fn) { strategy.for_each_replica(fn); });
//   outputs[3];   // replica 3's outputs
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "framework/jit/program_cache.h"
#include "framework/jit/state_trace.h"

namespace kestrel::jit {

/// What each replica's device holds besides the program, and how much memory it has.
struct ReplicaDeviceMemory {
  std::int64_t limit = 0;           ///< bytes per replica (0: unlimited)
  std::int64_t resident_bytes = 0;  ///< held by every replica between steps (optimizer state)
  std::string device = "device";    ///< named in the error ("a TPUStrategy replica")
};

class ReplicatedFunction {
 public:
  /// Runs its argument once for every replica (possibly in parallel) and returns when all ran.
  using ForEachReplica = std::function<void(const std::function<void(int replica)>&)>;

  /// `state`: the variables the function reads; it may not assign them (replicas share them).
  /// With a memory limit, a program that would not fit one replica's device fails as it compiles,
  /// with ResourceExhaustedError giving the figures.
  ReplicatedFunction(std::vector<Variable> state, StateFn fn, std::string name, ReplicaDeviceMemory memory = {});

  /// Runs the program on each replica's arguments (one signature for all), compiling it first on
  /// a new signature, and returns each replica's outputs in replica order.
  std::vector<std::vector<Tensor>> operator()(const std::vector<Args>& per_replica, const ForEachReplica& for_each,
                                              const std::string& key = "");

  std::int64_t compile_count() const { return programs_.compile_count(); }
  double compile_seconds() const { return programs_.compile_seconds(); }
  /// Bytes of every arena the replicas ran on (as many as ran at once).
  std::int64_t arena_bytes() const { return programs_.arena_bytes(); }
  /// Bytes of the arena one replica runs on: what each simulated device holds for intermediates.
  std::int64_t arena_bytes_per_replica() const { return programs_.largest_arena_bytes(); }
  /// The planned peak bytes of one replica's intermediates in the latest program run.
  std::int64_t planned_bytes_per_replica() const { return planned_bytes_; }
  const std::string& name() const { return programs_.function_name(); }

 private:
  Graph trace(const Args& args) const;
  void check_fits(const Executor& program, const std::string& signature) const;

  std::vector<Variable> state_;
  StateFn fn_;
  ReplicaDeviceMemory memory_;
  ProgramCache programs_;
  std::int64_t planned_bytes_ = 0;
};

}  // namespace kestrel::jit
