// What train_step_bench prints once every workload has run: the four ways of running each
// workload side by side (Kestrel eager and jit, PyTorch eager and TorchScript), and the verdicts
// on the training-step goals, judged on this run's ratios.
#pragma once

#include <iosfwd>
#include <vector>

#include "bench/harness.h"
#include "bench/train_step_workloads.h"

namespace kestrel::bench {

/// One workload's records from this run; each is null when filtered out or failed.
struct WorkloadRecords {
  const Workload* workload = nullptr;
  const Record* eager = nullptr;        ///< Kestrel, op by op
  const Record* jit = nullptr;          ///< Kestrel, compile({.jit_compile = true})
  const Record* torch = nullptr;        ///< PyTorch eager
  const Record* torchscript = nullptr;  ///< PyTorch, the model through torch.jit.script
};

/// Every workload with at least one record, in the reference table's order.
std::vector<WorkloadRecords> collect_train_step_records(const Harness& harness);

/// Step times and the jit's speedups; GFLOP/s and peak memory; first steps and the jit's compile.
void print_train_step_tables(const std::vector<WorkloadRecords>& results, std::ostream& out);

/// The goals: the MLP eager step at least as fast as PyTorch eager; the jit 1.3x faster than eager
/// on BERT-tiny and 1.25x faster than PyTorch eager on MLP, CNN and BERT-tiny; BERT-tiny compiling
/// in under 200 ms. GPT-tiny has no goal yet: it is in the tables only. Prints each verdict it can
/// judge and keeps it as a note.
void report_train_step_goals(const std::vector<WorkloadRecords>& results, Harness& harness, std::ostream& out);

}  // namespace kestrel::bench
