// What train_step_bench prints once every workload has run: the four ways of running each
// workload side by side (Kestrel eager and jit, PyTorch eager and TorchScript), and the verdicts
// on the training-step goals, judged on this run's ratios.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "bench/harness.h"
#include "bench/train_step_workloads.h"

namespace kestrel::bench {

/// One workload's records from this run; each is null when filtered out or failed.
struct WorkloadRecords {
  const Workload* workload = nullptr;
  std::string precision = "float32";    ///< the policy both sides ran (the peer's mixed: torch.autocast)
  const Record* eager = nullptr;        ///< Kestrel, op by op
  const Record* jit = nullptr;          ///< Kestrel, compile({.jit_compile = true})
  const Record* torch = nullptr;        ///< PyTorch eager
  const Record* torchscript = nullptr;  ///< PyTorch, the model through torch.jit.script
};

/// Every workload and precision with at least one record, in the reference table's order, float32 first.
std::vector<WorkloadRecords> collect_train_step_records(const Harness& harness);

/// Step times and the jit's speedups; GFLOP/s and peak memory; first steps and the jit's compile;
/// one set of tables per precision, then bfloat16's step time and memory against float32's.
void print_train_step_tables(const std::vector<WorkloadRecords>& results, std::ostream& out);

/// The goals: the MLP eager step at least as fast as PyTorch eager; the jit 1.3x faster than eager
/// on BERT-tiny and 1.25x faster than PyTorch eager on MLP, CNN and BERT-tiny; BERT-tiny compiling
/// in under 200 ms (all at float32); and bfloat16's: with AVX512_BF16 the mixed_bfloat16 jit step
/// >= 1.5x faster than float32's on BERT-tiny and GPT-tiny, without it at most 1.1x float32's time
/// with at most 0.75x its peak memory (over the process's base); the speed issue's, at float32: the
/// jit step >= 2.0x faster than PyTorch eager on CNN, BERT-tiny and GPT-tiny and >= 1.5x on the MLP
/// (each ratio beside the one a jit step at the FMA peak would reach), and never slower than Kestrel
/// eager. Prints each verdict it can judge and keeps it as a note.
void report_train_step_goals(const std::vector<WorkloadRecords>& results, Harness& harness, std::ostream& out);

}  // namespace kestrel::bench
