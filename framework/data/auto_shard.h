// Auto-sharding: how a dataset is split over the workers of a job (tf.data's AutoShardPolicy), as
// MultiWorkerMirroredStrategy, a TPU pod slice's TPUStrategy and Model::fit apply it.
//
//   data::Options options;
//   options.experimental_distribute.auto_shard_policy = data::AutoShardPolicy::data;
//   auto train = data::TextLineDataset(files).map(tokenize).padded_batch(64).with_options(options);
//
//   data::ShardedDataset mine = data::auto_shard(train, /*num_workers=*/2, /*worker_index=*/1);
//   mine.policy;    // data: every worker reads every global batch and keeps its replicas' rows
//
// The policies, as tf.data's:
// - FILE: each worker reads every num_workers-th file of the pipeline's file source (worker i
//   the files i, i + W, ...), and the pipeline's last batching transform makes batches of
//   1/W of the global batch: every worker brings its share of each step from its own files.
// - DATA: every worker reads the whole dataset and keeps its share of each global batch.
// - OFF: every worker reads the whole dataset, batched like FILE at 1/W of the global batch, so
//   each sample is seen W times an epoch, once by each worker.
// - AUTO (the default): FILE when the pipeline reads at least W files and batches, else DATA,
//   with a warning that says why (as tf.data's "AUTO sharding policy will apply DATA sharding
//   policy as it failed to apply FILE sharding policy ...").
//
// The steps of FILE and OFF count batches of the rewritten pipeline: take(n) after the batch is n
// steps of every worker. Transforms between the file source and the batch (map, filter, shuffle,
// take) apply to each worker's own files.
#pragma once

#include <string>

#include "framework/data/dataset.h"

namespace kestrel::data {

/// The pipeline every worker reads as it is given: one dataset of global batches.
struct ShardedDataset {
  /// This worker's pipeline: for file and off, its batches are 1/num_workers of the global
  /// batch; for data, the dataset unchanged.
  Dataset dataset;
  /// The policy applied: file, data or off (auto resolves to one of the first two).
  AutoShardPolicy policy = AutoShardPolicy::data;
  /// Why AUTO fell back to DATA (empty otherwise): the warning's reason.
  std::string fallback_reason;
  /// True for file and off: each worker's batches are its own, not rows of a shared global batch.
  bool per_worker() const { return policy != AutoShardPolicy::data; }
};

/// Applies the dataset's auto_shard_policy (Dataset::options) for worker `worker_index` of
/// `num_workers`. One worker: the dataset unchanged, policy data. Throws ValueError, naming the
/// pipeline and the fix, when FILE finds no file source or fewer files than workers, or when FILE
/// or OFF finds no batching transform or a batch size that does not divide by the workers.
ShardedDataset auto_shard(const Dataset& dataset, int num_workers, int worker_index);

/// "AUTO", "FILE", "DATA", "OFF": tf.data's names, as logs and errors show them.
std::string to_string(AutoShardPolicy policy);

}  // namespace kestrel::data
