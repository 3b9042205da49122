#include "framework/distribute/input_context.h"

#include <string>

#include "framework/distribute/replica_shards.h"

namespace kestrel::distribute {

std::int64_t InputContext::get_per_replica_batch_size(std::int64_t global_batch_size) const {
  return rows_per_replica(global_batch_size, num_replicas_in_sync, "InputContext.get_per_replica_batch_size",
                          "use a multiple of " + std::to_string(num_replicas_in_sync));
}

}  // namespace kestrel::distribute
