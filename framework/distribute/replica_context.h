// ReplicaContext: which replica this thread is running as, while a strategy runs its replicas
// (tf.distribute.get_replica_context()). Layers read it: dropout draws each replica's own masks,
// and only replica 0 records what every replica would (a layer's output shape). A step's
// replicas meet through it (merge_call.h): the optimizer's update and the metrics' see every
// replica's values, and compute_loss scales a replica's loss by its share of the global batch.
//
//   distribution.for_each_replica([&](int replica) {
//     distribute::ReplicaScope as_replica(replica, distribution.num_replicas_in_sync());
//     ...   // distribute::replica_context()->replica_id == replica
//   });
#pragma once

#include "framework/core/tensor.h"

namespace kestrel::distribute {

class Distribution;
class MergeTracer;
class ReplicaRendezvous;

struct ReplicaContext {
  /// This replica among the replicas this process runs, and how many those are.
  int replica_id = 0;
  int num_replicas = 1;
  /// The replica's id in sync (replica_id_in_sync_group) as an int64 scalar tensor when it is a
  /// traced value (one compiled program runs as every replica); undefined when replica_id says it.
  Tensor id;
  /// The strategy the replicas run under (its all-reduce sums at merge points); null when none.
  const Distribution* distribution = nullptr;
  /// Where this step's replicas meet (merge_call); null when they do not run side by side.
  ReplicaRendezvous* rendezvous = nullptr;
  /// While the step every replica runs is traced: what merge points become (collective ops of the
  /// program); null otherwise.
  const MergeTracer* merge_tracer = nullptr;
  /// The replica's share of the global batch's loss (Model::compute_loss multiplies by it, so the
  /// replicas' gradients add up to the global batch's); undefined when the loss is not scaled.
  Tensor loss_scale;

  /// This replica among the replicas in sync over every worker (TF's replica_id_in_sync_group),
  /// and how many those are: replica_id and num_replicas when the job is one process.
  int replica_id_in_sync_group() const;
  int num_replicas_in_sync() const;
};

/// The replica this thread runs as, or null outside a replica (the cross-replica context).
const ReplicaContext* replica_context();

/// True unless this thread runs a replica other than replica 0: the one thread that may write
/// what replicas share (a layer's recorded output shape).
inline bool records_shared_state() {
  const ReplicaContext* context = replica_context();
  return context == nullptr || context->replica_id == 0;
}

/// Makes this thread run as `replica_id` of `num_replicas` for the scope's lifetime.
class ReplicaScope {
 public:
  ReplicaScope(int replica_id, int num_replicas);
  /// Makes this thread run as the context says: a replica of a step that meets the others.
  explicit ReplicaScope(ReplicaContext context);
  ~ReplicaScope();
  ReplicaScope(const ReplicaScope&) = delete;
  ReplicaScope& operator=(const ReplicaScope&) = delete;

 private:
  const ReplicaContext* previous_;
  ReplicaContext context_;
};

}  // namespace kestrel::distribute
