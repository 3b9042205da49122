// What tutorial 05 reports after training on a TPUStrategy: the figures that say whether a TPU run
// is healthy, printed and written as JSON.
//
//   tutorials::tpu::RunReport report{.replicas = 8, .fit_jit = history.jit, .jit = model.jit_stats(),
//                                    .padding = train.padding_stats(),
//                                    .memory = tutorials::tpu::memory_per_replica(model, 16 << 30), ...};
//   tutorials::tpu::print_report(report);
//   tutorials::tpu::write_json("summary.json", report);
#pragma once

#include <cstdint>
#include <string>

#include "framework/data/padding_stats.h"
#include "framework/jit/memory_plan.h"
#include "framework/model/callback.h"
#include "framework/model/fit_options.h"
#include "framework/model/model.h"

namespace kestrel::tutorials::tpu {

/// What one replica holds, as a TPU core holds it in its own memory, by dtype: a bfloat16 policy
/// halves the weights, gradients and optimizer state, and bfloat16 computation the activations.
/// The simulated replicas share the host's memory instead: one copy of the weights and the
/// optimizer state for all of them.
struct ReplicaMemory {
  jit::BytesByDtype weights;                ///< every weight of the model
  jit::BytesByDtype gradients;              ///< one per trainable weight, in its dtype: what a replica's step returns
  jit::BytesByDtype optimizer_state;        ///< the optimizer's slots and counters
  std::int64_t intermediates = 0;           ///< the replica's arenas: its compiled programs' planned intermediates
  jit::BytesByDtype intermediates_at_peak;  ///< what the largest program holds live at its peak
  std::int64_t host_arenas = 0;             ///< the arenas this process holds: one set per replica running at once
  std::int64_t core = 0;                    ///< the core's memory (0: unlimited)

  std::int64_t total() const {
    return jit::total_bytes(weights) + jit::total_bytes(gradients) + jit::total_bytes(optimizer_state) + intermediates;
  }
};

/// The memory of one replica of a model trained (compiled) under a strategy whose cores have
/// core_bytes of memory each.
ReplicaMemory memory_per_replica(const Model& model, std::int64_t core_bytes);

struct RunReport {
  std::string precision = "float32";  ///< the global dtype policy the model was made under
  int replicas = 1;
  std::int64_t steps = 0;  ///< training steps fit ran
  std::int64_t global_batch = 0;
  double fit_seconds = 0.0;
  JitStats fit_jit;             ///< what fit compiled (training and validation programs)
  JitStats jit;                 ///< everything compiled, after the test set's evaluation
  data::PaddingReport padding;  ///< the training batches' (training passes only)
  ReplicaMemory memory;
  Logs test_logs;
  double reloaded_accuracy = 0.0;  ///< set once the reloaded model is evaluated
};

/// The text's tokens trained per second of fit: the training batches' real tokens (the padding
/// statistics count them, whether a collator or a bucketing pads) over fit's time, validation
/// included.
double real_tokens_per_second(const RunReport& report);

/// The summary table on stdout.
void print_report(const RunReport& report);

/// The test metrics as every tutorial writes them ("test_loss", "test_accuracy"), the reloaded
/// model's accuracy, and the report's figures; throws IOError naming the file on failure.
void write_json(const std::string& path, const RunReport& report);

}  // namespace kestrel::tutorials::tpu
