// rows_per_replica: how a global batch is split over the replicas in sync, the one rule fit,
// evaluate, predict, Strategy::experimental_distribute_dataset and InputContext follow. Each
// replica holds an equal, contiguous shard, in replica order: replica r has rows
// [r * shard, (r + 1) * shard) of the global batch.
//
//   const std::int64_t shard = distribute::rows_per_replica(64, 8, "fit (TPUStrategy)", "...");   // 8
//
// shard_rows cuts a global batch's tensor that way and join_rows puts replicas' rows back together
// (the all-gather): the one splitter fit's steps and distributed datasets use. Both copy whole rows
// and write into buffers given back from the step before when they can, so a steady step's
// splitting allocates nothing.
//
//   std::vector<Tensor> shards;                                  // kept from step to step
//   distribute::shard_rows(global_x, 8, shards, "fit (TPUStrategy)");   // shards[r]: replica r's rows
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "framework/core/tensor.h"

namespace kestrel::distribute {

/// The rows of each replica's shard of a global batch of `global_rows`. Throws ValueError when
/// they do not divide: "<where>: a global batch of 10 rows does not divide by the 8 replicas;
/// <fix>", or when global_rows < 1 or replicas < 1.
std::int64_t rows_per_replica(std::int64_t global_rows, int replicas, std::string_view where, std::string_view fix);

/// Replica r's rows of `global` into shards[r], for every replica (shards is resized to
/// `replicas`); a shard's tensor is reused when nothing else holds it (Tensor::empty_or_reused).
/// An undefined `global` gives undefined shards. Throws as rows_per_replica does, naming `where`.
void shard_rows(const Tensor& global, int replicas, std::vector<Tensor>& shards, std::string_view where);

/// The replicas' tensors joined along axis 0 in replica order, written into `reused` when nothing
/// else holds it. Every tensor has one spec but for its rows; undefined when all are undefined.
Tensor join_rows(const std::vector<Tensor>& per_replica, Tensor reused = Tensor());

}  // namespace kestrel::distribute
