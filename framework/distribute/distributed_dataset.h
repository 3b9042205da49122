// DistributedDataset: a dataset whose every step is one element per replica — what
// Strategy::experimental_distribute_dataset and distribute_datasets_from_function return.
//
//   auto distributed = strategy.experimental_distribute_dataset(train.batch(64, {.drop_remainder = true}));
//   auto it = distributed.make_iterator();
//   while (std::optional<distribute::PerReplica<data::Element>> step = it->next()) {
//     (*step)[3];   // replica 3's shard: rows 24..31 of the global batch of 64, on 8 replicas
//   }
#pragma once

#include <memory>
#include <optional>

#include "framework/data/dataset.h"
#include "framework/distribute/distribution.h"
#include "framework/distribute/per_replica.h"

namespace kestrel::distribute {

/// Which replicas in sync a process's are, when a job has several workers.
struct WorkerShare {
  int first_replica = 0;
  int replicas_in_sync = 0;  ///< 0: this process's replicas are all of them
};

class DistributedDataset {
 public:
  /// One pass: each next() is one step, one element per replica, or nullopt at the end.
  class Iterator {
   public:
    virtual ~Iterator() = default;
    virtual std::optional<PerReplica<data::Element>> next() = 0;
  };

  /// Each element of `global_batches` is a global batch, split along its first axis into one
  /// equal shard per replica in sync, of which this process keeps its `replicas` (`share`). A
  /// batch whose rows do not divide is a ValueError naming the fix. (DATA auto-sharding.)
  static DistributedDataset split_batches(data::Dataset global_batches, int replicas, WorkerShare share = {});
  /// Each element of `worker_batches` is this worker's own part of a global batch (FILE or OFF
  /// auto-sharding), split over its `replicas`. Passes end together on every worker of
  /// `workers` (see below).
  static DistributedDataset split_worker_batches(data::Dataset worker_batches, int replicas,
                                                 const Distribution& workers);
  /// Each element of `replica_batches` is already one replica's batch: a step takes `replicas`
  /// consecutive elements. A pass whose element count does not divide ends at the last whole
  /// step. Given `workers` (several), passes end together on every worker.
  static DistributedDataset interleave_replicas(data::Dataset replica_batches, int replicas,
                                                const Distribution* workers = nullptr);

  // Workers that read pipelines of their own can run out at different steps, but every step is
  // a collective. So they agree at each step: the pass goes on while any worker has data, and a
  // worker whose data has ended gives its replicas batches of zero rows, shaped as its last (as
  // tf.distribute does). A worker that had no data at all is a ValueError on every worker.

  std::unique_ptr<Iterator> make_iterator() const;
  /// Each step's elements of this process's replicas joined into one batch, in replica order
  /// (its part of the global batch): what Model::fit, evaluate and predict read a distributed
  /// dataset as. Its element_spec is the source's.
  data::Dataset worker_batches() const;
  /// This process's replicas (one element each per step).
  int num_replicas() const { return replicas_; }
  /// The dataset it reads from.
  const data::Dataset& source() const { return source_; }

 private:
  enum class Mode { split, split_own, interleave };
  DistributedDataset(data::Dataset source, int replicas, Mode mode, WorkerShare share, const Distribution* workers);

  data::Dataset source_;
  int replicas_;
  Mode mode_;
  WorkerShare share_;
  const Distribution* workers_;  // to agree with when each worker reads its own pipeline; else null
};

/// Every value of a global batch (tensors and string arrays alike) cut into `replicas` shards of
/// `shard` rows, in replica order (distribute::shard_rows for the tensors).
PerReplica<data::Element> split_element(const data::Element& element, int replicas, std::int64_t shard);
/// The replicas' elements joined along their rows, in replica order (split_element undone;
/// distribute::join_rows for the tensors). They must have the same keys.
data::Element join_elements(const PerReplica<data::Element>& elements);

}  // namespace kestrel::distribute
