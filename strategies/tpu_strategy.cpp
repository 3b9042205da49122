#include "strategies/tpu_strategy.h"

#include "framework/core/error.h"
#include "framework/jit/memory_plan.h"
#include "framework/logging/logging.h"

namespace kestrel::distribute {

TPUClusterResolver TPUClusterResolver::local(TPUClusterOptions options) {
  if (options.num_cores < 1) {
    throw ValueError("TPUClusterResolver: num_cores must be >= 1, got " + std::to_string(options.num_cores));
  }
  if (options.memory_per_core <= 0) {
    throw ValueError("TPUClusterResolver: memory_per_core must be > 0 bytes, got " +
                     std::to_string(options.memory_per_core));
  }
  return TPUClusterResolver(options);
}

TPUStrategy::TPUStrategy(const TPUClusterResolver& resolver)
    : Strategy("TPUStrategy", resolver.options().num_cores, resolver.options().memory_per_core) {
  const TPUClusterOptions& o = resolver.options();
  auto log = logging::get("kestrel.distribute");
  log->info("Found TPU system: {} cores ({}, simulated), {} of memory per core", o.num_cores, resolver.master(),
            jit::format_bytes(o.memory_per_core));
  log->info("TPU topology: 1 worker (host), {} cores, {} replicas in sync, one program per step run on each core",
            o.num_cores, o.num_cores);
}

}  // namespace kestrel::distribute
