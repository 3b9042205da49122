// The reference training workloads of train_step_bench (shared/BENCH.md): MLP, CNN, BERT-tiny and
// GPT-tiny, each a compiled Kestrel model with its fixed batch, ready for
// model.train_on_batch(inputs, labels). replica_bench trains BERT-tiny and GPT-tiny from here too.
//
//   const Workload& w = *find_workload("bert_tiny");
//   TrainStep step = make_train_step(w, Mode::jit);     // compile({..., .jit_compile = true})
//   step.model->train_on_batch(step.inputs, step.labels);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/harness.h"
#include "framework/core/tensor.h"
#include "framework/model/inputs.h"
#include "framework/model/model.h"

namespace kestrel::bench {

/// Every workload runs on 2 threads, Kestrel's and the peer's.
constexpr int kTrainStepThreads = 2;

struct Workload {
  const char* name;   ///< "mlp", "cnn", "bert_tiny", "gpt_tiny": the "model" param of its records
  const char* title;  ///< as the reference table names it: "MLP", "CNN", "BERT-tiny", "GPT-tiny"
  std::int64_t batch;
  double training_gflop;  ///< per step: 3 x the forward matmul/conv FLOPs (the reference table)
  std::int64_t params;    ///< the reference parameter count, checked against the model
  /// training_gflop is what a step multiplies. Not for the MLP and CNN: no step takes their first
  /// layer's input gradient, which 3 x forward counts, so their GFLOP/s overstate the work done.
  bool exact_flops;
};

/// MLP, CNN, BERT-tiny and GPT-tiny, in the reference table's order.
const std::vector<Workload>& train_step_workloads();
/// The workload of that name, or null.
const Workload* find_workload(std::string_view name);

/// How Kestrel runs the step: op by op on the tape, or as one program compiled by the jit.
enum class Mode { eager, jit };
const char* mode_name(Mode mode);
std::optional<Mode> parse_mode(std::string_view name);
/// The peer's counterpart of a mode: PyTorch eager for eager, TorchScript for the jit.
const char* peer_mode_name(Mode mode);

/// The precision policies the bench runs ("float32", "mixed_bfloat16", "bfloat16"); the peer runs
/// mixed_bfloat16 under torch.autocast("cpu", dtype=torch.bfloat16).
bool is_precision(std::string_view name);

/// {"model": ..., "batch": ..., "threads": 2, "mode": mode, "precision": precision}: the params of a
/// record, Kestrel's or the peer's.
Json train_step_params(const Workload& workload, const std::string& mode, const std::string& precision);
/// "train_step model=mlp batch=256 threads=2 mode=jit precision=float32".
std::string train_step_label(const Workload& workload, const std::string& mode, const std::string& precision);

/// A workload made ready to train: the compiled model and the batch fed to it every step.
struct TrainStep {
  std::unique_ptr<Model> model;
  Inputs inputs;
  Tensor labels;
};

/// Builds the workload's model with the global seed 0 under the precision policy (the global one
/// stays as it was), checks its parameter count against the reference (throws ValueError when it
/// differs), makes the seeded batch and compiles the model with the workload's optimizer and loss,
/// no metrics, and jit_compile as `mode` says. Called inside a strategy's scope, the model and its
/// optimizer belong to that strategy.
TrainStep make_train_step(const Workload& workload, Mode mode, const std::string& precision = "float32");

}  // namespace kestrel::bench
