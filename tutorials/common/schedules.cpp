#include "tutorials/common/schedules.h"

#include <algorithm>

namespace kestrel::tutorials {

optimizers::schedules::CosineDecay warmup_cosine(double peak_learning_rate, std::int64_t total_steps) {
  const std::int64_t warmup_steps = total_steps / 10;
  return optimizers::schedules::CosineDecay({.initial_learning_rate = 0.0,
                                             .decay_steps = std::max<std::int64_t>(1, total_steps - warmup_steps),
                                             .warmup_target = peak_learning_rate,
                                             .warmup_steps = warmup_steps});
}

}  // namespace kestrel::tutorials
