// ProgramCache: the compiled programs of one jitted function, one per input signature, with
// what every compile costs — the part of jit_compile that makes XLA's rule 3 visible.
//
//   ProgramCache cache("train_step");
//   const Executor& program = cache.get(signature, [&] { return trace_my_function(); });
//   cache.compile_count();   // 1 after the first call, still 1 while the signature repeats
//
// A compile traces (the callback), runs the pass pipeline, plans memory and logs at info level
// why it compiled: the new signature and the ones already cached. KESTREL_DUMP_DIR dumps the
// graph before and after the passes. When 5 of the last 10 calls compiled, shapes are changing
// step to step, and a warning names the fix (pad batches to a multiple). The programs share one
// arena, as large as the largest plan, so many shapes cost many programs but one block of memory.
//
// A program may come in parts, compiled one by one but counted and logged as one compile: a
// replicated step split at its collectives (replica_stages.h) is one program of several parts.
//
//   const auto& parts = cache.get_parts(signature, [&] { return split_graphs(); });   // parts[k]: part k
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "framework/jit/executor.h"

namespace kestrel::jit {

class ProgramCache {
 public:
  explicit ProgramCache(std::string function_name);

  /// The program for this signature; on a miss, trace() builds its graph and it is compiled.
  /// `instance` > 0 asks for another executor of the same program, with an arena of its own, for
  /// replicas that run it side by side (made from the compiled graph: no compile, no count).
  const Executor& get(const std::string& signature, const std::function<Graph()>& trace, int instance = 0);
  /// The same for a program in parts: trace() gives every part's graph; the parts of one
  /// instance share its arena (they run one after another).
  std::vector<const Executor*> get_parts(const std::string& signature, const std::function<std::vector<Graph>()>& trace,
                                         int instance = 0);

  std::int64_t compile_count() const { return compile_count_; }
  double compile_seconds() const { return compile_seconds_; }
  /// Bytes of the arenas the programs share (the largest plan so far, once per instance).
  std::int64_t arena_bytes() const;
  /// Bytes of the largest instance's arena (0 before any run).
  std::int64_t largest_arena_bytes() const;
  /// What is live, by dtype, at the peak of the compiled part whose peak is the highest.
  BytesByDtype largest_live_peak_by_dtype() const;
  /// The graph compiled for a signature (its first part's), or null.
  const Graph* graph(const std::string& signature) const;
  const std::string& function_name() const { return function_name_; }

  /// A storm: at least this many compiles among the last kStormWindow calls.
  static constexpr int kStormWindow = 10;
  static constexpr int kStormCompiles = 5;

 private:
  using Parts = std::vector<std::unique_ptr<Executor>>;
  using Instances = std::vector<Parts>;  // [0]: the compiled program
  Instances& compile(const std::string& signature, const std::function<std::vector<Graph>()>& trace);
  const std::shared_ptr<Arena>& arena(int instance);
  void note_call(bool compiled);

  std::string function_name_;
  // One block per instance for every program: one instance's programs never run at the same time.
  std::vector<std::shared_ptr<Arena>> arenas_;
  std::map<std::string, Instances> programs_;
  std::int64_t compile_count_ = 0;
  double compile_seconds_ = 0.0;
  std::deque<bool> recent_;  // whether each of the last calls compiled, newest last
  bool storm_reported_ = false;
};

}  // namespace kestrel::jit
