// Profiles of compiled programs: with KESTREL_PROFILE=1, every compiled program times its kernels,
// and when the process ends the time per run goes to stderr per kind of op, with the GFLOP/s of
// each matmul shape, so the next bottleneck shows without a profiler.
//
//   KESTREL_PROFILE=1 ./build/tutorials/05_tpu_strategy/tpu_strategy
//   // KESTREL_PROFILE: kernel time per run of each compiled program
//   // 'train_step' #1 part 0 for ..., x.input_ids: int64[8,20], y: int64[8]: 696 runs, 3.314 ms a run
//   //   op kind                                calls    ms/run     share
//   //   matmul                                    54     1.933     58.3%
//   //   dropout                                   16     0.860     26.0%
//   //   ...
//   //   matmul [batch] m x n x k               calls    ms/run   GFLOP/s
//   //   160 x 512 x 128                            4     0.406     206.8
//
//   jit::set_profiling(true);             // the same from code (KESTREL_PROFILE sets the default)
//   std::string text = jit::profile_report();
//
// What is timed is each kernel call of a program run, on the thread that runs it: a program that
// several replicas run (one per replica of a compiled step) adds every replica's runs to one
// profile. Views (reshape) cost nothing and are left out; the time between kernels (the executor's
// own work) is not counted. A step compiled for several replicas also has a profile of its
// collectives ("'train_step' #1 collectives for ..."): the all-reduces, the all-gathers, and the
// weight gradients' products over every replica's rows, under matmul. Turning profiling on or off
// affects the programs compiled after it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "framework/jit/graph.h"

namespace kestrel::jit {

/// Whether programs compiled from now on are profiled: set_profiling's value, else KESTREL_PROFILE
/// (unset, "" or "0" off, "1" on; anything else a ValueError naming the variable, read once).
bool profiling();
void set_profiling(bool on);

/// Every profiled program's time per run by op kind and matmul shape (the text printed at exit);
/// "" when nothing was profiled.
std::string profile_report();
/// Forgets every profile gathered so far (programs keep profiling).
void reset_profiles();

/// What a profile reports of one timed call: its op kind, and for a matrix product its shape
/// ("[8] 128 x 64 x 64": batch, m x n x k) and FLOPs.
struct ProfiledOp {
  std::string kind;
  std::string matmul_shape;  ///< "" unless a matrix product
  double flops = 0;
};

/// A node of `graph` as profiled: nullopt for what is not timed (inputs, constants, views).
std::optional<ProfiledOp> profiled_op(const Graph& graph, ValueId node);

/// One executor's share of its program's profile: the time of each call over a run, added to the
/// program's profile when the run ends. The program is named by `program`; executors of one
/// program (one per replica running at once) share its profile.
class ProgramProfiler {
 public:
  /// The calls of a run, by index (a graph's values, or a step's collectives in order); nullopt
  /// for an index never timed.
  ProgramProfiler(std::string program, const std::vector<std::optional<ProfiledOp>>& calls);
  /// Every op node of `graph`, by value id.
  ProgramProfiler(std::string program, const Graph& graph);
  /// Call `call` (a graph value, or a collective's index) ran for `ns` nanoseconds in this run.
  void add(std::int64_t call, std::int64_t ns) { call_ns_[static_cast<std::size_t>(call)] += ns; }
  /// The run ended: its times join the program's profile.
  void finish_run();

 private:
  std::size_t program_;                  // the program's index in the registry
  std::vector<std::int32_t> kind_of_;    // per call: its op kind's row, or -1 (not timed)
  std::vector<std::int32_t> matmul_of_;  // per call: its matmul shape's row, or -1
  std::vector<std::int64_t> call_ns_;    // this run's time per call
};

}  // namespace kestrel::jit
