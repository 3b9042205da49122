#include "strategies/input_context.h"

#include <string>

#include "framework/core/error.h"

namespace kestrel::distribute {

std::int64_t InputContext::get_per_replica_batch_size(std::int64_t global_batch_size) const {
  if (global_batch_size <= 0 || global_batch_size % num_replicas_in_sync != 0) {
    throw ValueError("InputContext: the global batch size " + std::to_string(global_batch_size) +
                     " does not divide by the " + std::to_string(num_replicas_in_sync) +
                     " replicas in sync; use a multiple of " + std::to_string(num_replicas_in_sync));
  }
  return global_batch_size / num_replicas_in_sync;
}

}  // namespace kestrel::distribute
