// The training step that random layers (Dropout) fold into their keys.
//
//   layers::set_training_step(optimizer.iterations());   // the fit loop, before each step
//   Tensor y = dropout(x, /*training=*/true);             // mask from (seed, step, call index)
//
// A dropout mask is a pure function of the layer's seed, this step and how many times the layer
// ran earlier in this step, so a run resumed from a checkpoint at step n draws the masks it would
// have. The step and the call counts are per thread: each replica's thread keeps its own.
#pragma once

#include <cstdint>

namespace kestrel::layers {

/// Sets this thread's training step (the optimizer's iteration count) and restarts call counts.
void set_training_step(std::int64_t step);
/// This thread's training step; 0 until set.
std::int64_t training_step();
/// How many times `caller` (a layer) asked before in this step on this thread: 0, 1, 2, ...
std::int64_t next_call_index(const void* caller);

}  // namespace kestrel::layers
