// The training step that random layers (Dropout) fold into their keys.
//
//   layers::TrainingStepScope step(optimizer.iterations_variable().value());   // the train step
//   Tensor y = dropout(x, /*training=*/true);   // mask from (seed, step, call index)
//
// A dropout mask is a pure function of the layer's seed, this step and how many times the layer
// ran earlier in this step, so a run resumed from a checkpoint at step n draws the masks it would
// have. The step is a tensor, not a host number: in a compiled train step it is the traced
// iteration count, so every replay of the program draws new masks without compiling again.
// The step and the call counts are per thread: each replica's thread keeps its own.
#pragma once

#include <cstdint>
#include <memory>

#include "framework/core/tensor.h"

namespace kestrel::layers {

/// Makes `step` (an int64 scalar tensor) this thread's training step for the scope's lifetime,
/// with call counts restarted; the previous step and counts return when it ends.
class TrainingStepScope {
 public:
  explicit TrainingStepScope(Tensor step);
  explicit TrainingStepScope(std::int64_t step);
  ~TrainingStepScope();
  TrainingStepScope(const TrainingStepScope&) = delete;
  TrainingStepScope& operator=(const TrainingStepScope&) = delete;

 private:
  struct Saved;
  std::unique_ptr<Saved> saved_;
};

/// This thread's training step, an int64 scalar tensor; 0 outside any TrainingStepScope.
Tensor training_step();
/// How many times `caller` (a layer) asked before in this step on this thread: 0, 1, 2, ...
std::int64_t next_call_index(const void* caller);

}  // namespace kestrel::layers
