// rows_per_replica: how a global batch is split over the replicas in sync, the one rule fit,
// evaluate, predict, Strategy::experimental_distribute_dataset and InputContext follow. Each
// replica holds an equal, contiguous shard, in replica order: replica r has rows
// [r * shard, (r + 1) * shard) of the global batch.
//
//   const std::int64_t shard = distribute::rows_per_replica(64, 8, "fit (TPUStrategy)", "...");   // 8
#pragma once

#include <cstdint>
#include <string_view>

namespace kestrel::distribute {

/// The rows of each replica's shard of a global batch of `global_rows`. Throws ValueError when
/// they do not divide: "<where>: a global batch of 10 rows does not divide by the 8 replicas;
/// <fix>", or when global_rows < 1 or replicas < 1.
std::int64_t rows_per_replica(std::int64_t global_rows, int replicas, std::string_view where, std::string_view fix);

}  // namespace kestrel::distribute
