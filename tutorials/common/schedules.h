// The learning-rate schedule the transformer tutorials train with: a linear warm-up from 0 over
// the first tenth of the steps, then a cosine decay to zero. Transformers trained with Adam at a
// full rate from the first step often diverge; the warm-up lets Adam's moment estimates settle.
//
//   model.compile({.optimizer = optimizers::AdamW({.learning_rate = tutorials::warmup_cosine(1e-3, steps)}), ...});
#pragma once

#include <cstdint>

#include "framework/optimizers/schedules.h"

namespace kestrel::tutorials {

/// Peaks at peak_learning_rate after total_steps / 10 steps, reaches 0 at total_steps.
optimizers::schedules::CosineDecay warmup_cosine(double peak_learning_rate, std::int64_t total_steps);

}  // namespace kestrel::tutorials
