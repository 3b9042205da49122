// What fit / evaluate / predict take, with Keras's names and defaults.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <variant>
#include <vector>

#include "framework/data/dataset.h"
#include "framework/model/callback.h"
#include "framework/model/inputs.h"

namespace kestrel {

struct ValidationData {
  Inputs x;
  Outputs y;
  Tensor sample_weight;
};

/// Validation arrays, or a dataset of batches (as fit's own dataset).
using ValidationSource = std::variant<ValidationData, data::Dataset>;

struct FitOptions {
  std::int64_t batch_size = 32;
  int epochs = 1;
  /// 0 silent; 1 progress bar (one line per epoch when stdout is not a terminal); 2 one line per epoch.
  int verbose = 1;
  std::vector<Handle<Callback>> callbacks;
  /// Fraction of the data, taken from the end before shuffling, held out for validation (arrays only).
  double validation_split = 0.0;
  std::optional<ValidationSource> validation_data;
  /// Shuffle arrays each epoch (a Dataset shuffles itself: Dataset::shuffle).
  bool shuffle = true;
  /// Weight per class index, multiplied into each sample's weight.
  std::map<std::int64_t, double> class_weight;
  /// Weight per sample ([n]).
  Tensor sample_weight;
  int initial_epoch = 0;
  /// Batches per epoch; 0 means one pass over the data (required for a dataset that repeats forever).
  std::int64_t steps_per_epoch = 0;
  /// Batch size for validation; 0 means batch_size.
  std::int64_t validation_batch_size = 0;
  /// Validation batches per epoch; 0 means one pass (required for validation data that repeats forever).
  std::int64_t validation_steps = 0;
};

struct EvaluateOptions {
  std::int64_t batch_size = 32;
  int verbose = 1;
  Tensor sample_weight;
  /// Batches to evaluate; 0 means all.
  std::int64_t steps = 0;
  std::vector<Handle<Callback>> callbacks;
};

struct PredictOptions {
  std::int64_t batch_size = 32;
  int verbose = 0;
  std::int64_t steps = 0;
  std::vector<Handle<Callback>> callbacks;
};

/// What jit_compile has cost: programs compiled for the train, test and predict steps (one per new
/// input signature), and the time spent tracing and compiling them.
struct JitStats {
  std::int64_t compiles = 0;
  double compile_seconds = 0.0;
  /// Memory the compiled steps hold for their intermediates: one arena per step function, as
  /// large as its largest program (in History: at the end of the fit). Under a strategy, one per
  /// replica running at once (the replicas share the host), all of them counted here.
  std::int64_t arena_bytes = 0;
  /// The part of arena_bytes one replica runs on: what each simulated device holds for its
  /// intermediates (equal to arena_bytes without a strategy).
  std::int64_t arena_bytes_per_replica = 0;
  /// What one replica's intermediates hold at their peak, by dtype (each step function's largest
  /// program, summed as arena_bytes_per_replica): where bfloat16 computation saves memory.
  std::map<DType, std::int64_t> live_peak_by_dtype_per_replica;
};

/// What fit returns: per-epoch logs, as keras.callbacks.History.
struct History {
  std::vector<int> epoch;
  std::map<std::string, std::vector<double>> history;  ///< "loss", "accuracy", "val_loss", ...
  /// What jit_compile cost during this fit (zero without it).
  JitStats jit;
};

}  // namespace kestrel
