// TPUStrategy and TPUClusterResolver: 8 simulated TPU cores, each with its own simulated memory,
// replicating a model as tf.distribute.TPUStrategy does on a TPU v3-8.
//
//   distribute::TPUStrategy strategy(distribute::TPUClusterResolver::local());
//   // [kestrel.distribute] Found TPU system: 8 cores (local, simulated), 16.00 GiB of memory per core
//   auto scope = strategy.scope();
//
// A compiled step whose planned memory per replica exceeds a core's memory fails at compile time
// with the figures (ResourceExhausted), as an XLA program that does not fit in HBM does.
#pragma once

#include <cstdint>
#include <string>

#include "strategies/strategy.h"

namespace kestrel::distribute {

struct TPUClusterOptions {
  /// Simulated cores (replicas in sync), >= 1.
  int num_cores = 8;
  /// Simulated memory per core in bytes (a TPU v3 core has 16 GiB of HBM).
  std::int64_t memory_per_core = std::int64_t{16} << 30;
};

/// Where the TPU system is: here always a local, simulated one.
class TPUClusterResolver {
 public:
  /// The local simulated TPU system.
  static TPUClusterResolver local(TPUClusterOptions options = {});
  const TPUClusterOptions& options() const { return options_; }
  /// "local": the simulated system in this process
  std::string master() const { return "local"; }

 private:
  explicit TPUClusterResolver(TPUClusterOptions options) : options_(options) {}
  TPUClusterOptions options_;
};

class TPUStrategy : public Strategy {
 public:
  /// Connects to the resolved system and logs its topology on "kestrel.distribute".
  explicit TPUStrategy(const TPUClusterResolver& resolver);
};

}  // namespace kestrel::distribute
