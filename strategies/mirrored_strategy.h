// DefaultStrategy and MirroredStrategy: one replica, and N simulated replicas on this machine's
// cores (tf.distribute.MirroredStrategy, with CPU replicas standing for GPUs).
//
//   distribute::MirroredStrategy strategy({.num_replicas = 4});
//   auto scope = strategy.scope();
#pragma once

#include "strategies/strategy.h"

namespace kestrel::distribute {

/// One replica: what runs outside every scope, as an explicit strategy.
class DefaultStrategy : public Strategy {
 public:
  DefaultStrategy() : Strategy("DefaultStrategy", 1, std::nullopt) {}
};

struct MirroredStrategyOptions {
  /// Replicas in sync (>= 1). Keras mirrors over the visible GPUs, or one CPU replica without any.
  int num_replicas = 1;
};

class MirroredStrategy : public Strategy {
 public:
  explicit MirroredStrategy(MirroredStrategyOptions options = {})
      : Strategy("MirroredStrategy", options.num_replicas, std::nullopt) {}
};

}  // namespace kestrel::distribute
