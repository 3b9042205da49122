#include "framework/distribute/replica_shards.h"

#include <string>

#include "framework/core/error.h"

namespace kestrel::distribute {

std::int64_t rows_per_replica(std::int64_t global_rows, int replicas, std::string_view where, std::string_view fix) {
  if (replicas < 1) {
    throw ValueError(std::string(where) + ": the number of replicas must be >= 1, got " + std::to_string(replicas));
  }
  if (global_rows < 1 || global_rows % replicas != 0) {
    throw ValueError(std::string(where) + ": a global batch of " + std::to_string(global_rows) +
                     " rows does not divide by the " + std::to_string(replicas) + " replicas; " + std::string(fix));
  }
  return global_rows / replicas;
}

}  // namespace kestrel::distribute
