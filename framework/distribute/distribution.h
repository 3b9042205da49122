// Distribution: what the framework needs to know about a distribution strategy — how many replicas
// run in sync, how to run a function on each, how their values combine — so that Model and
// Variable can honour strategies without depending on them. The strategies library
// (strategies/: MirroredStrategy, TPUStrategy, ...) implements it; users meet it through those.
//
//   auto scope = strategy.scope();          // a DistributionScope inside: strategy is current
//   MyModel model;                           // its variables belong to strategy
//   distribute::current()->num_replicas_in_sync();   // 8 under TPUStrategy
//
// Outside every scope there is no current distribution: the default strategy, one replica.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "framework/core/tensor.h"
#include "framework/core/variable.h"

namespace kestrel::distribute {

class Distribution {
 public:
  virtual ~Distribution() = default;

  /// The strategy's class name, as errors and logs show it ("TPUStrategy").
  virtual std::string name() const = 0;
  /// Replicas in sync over every worker: the global batch is split over them all.
  virtual int num_replicas_in_sync() const = 0;
  /// The replicas this process runs (for_each_replica's, and the per-replica lists the
  /// collectives take): num_replicas_in_sync() / num_workers().
  virtual int num_local_replicas() const { return num_replicas_in_sync(); }
  /// The processes of the job (one per machine or TPU host; MPI ranks), and this one's index among
  /// them: 0 is the chief, which writes checkpoints and logs.
  virtual int num_workers() const { return 1; }
  virtual int worker_index() const { return 0; }
  bool is_chief() const { return worker_index() == 0; }
  /// This worker's local replica 0 among the replicas in sync (TF's replica_id_in_sync_group):
  /// worker w runs replicas [w * local, (w + 1) * local), so its rows of a global batch follow
  /// the workers before it.
  int first_local_replica() const { return worker_index() * num_local_replicas(); }
  /// Runs fn(replica) for every local replica on the strategy's threads and returns when all are
  /// done; the first exception (by replica order) is rethrown. Replicas are handed to the threads
  /// as they come free (fewer threads than replicas), so fn must not wait for another replica.
  virtual void for_each_replica(const std::function<void(int replica)>& fn) const = 0;
  /// Runs fn(replica) for every replica at once, each on a thread of its own (TF's
  /// MirroredStrategy gives each replica a thread), as one step whose replicas meet at merge
  /// points (merge_call.h): each runs in a ReplicaScope with this strategy and the step's
  /// rendezvous, and in the strategy's scope. Returns when all are done; the first failure by
  /// replica order is rethrown (a ReplicaCancelledError only when no replica failed otherwise).
  /// Kernels inside a replica run serially when the replicas fill the cores. Throws ValueError
  /// when called from inside a replica.
  virtual void call_for_each_replica(const std::function<void(int replica)>& fn) const = 0;
  /// Sums one tensor list per local replica, element by element, over every replica in sync:
  /// this worker's replicas in replica order, then the workers' sums in worker order (the same
  /// bits on every run and every worker): the all-reduce of the gradients at Optimizer::apply's
  /// merge point. A position undefined on every replica stays undefined. A sum is written into reused[k] when that tensor
  /// has its spec and nothing else holds it (last step's sums, given back), else into a new one.
  virtual std::vector<Tensor> all_reduce_sum(const std::vector<std::vector<Tensor>>& per_replica,
                                             std::vector<Tensor> reused) const = 0;
  std::vector<Tensor> all_reduce_sum(const std::vector<std::vector<Tensor>>& per_replica) const {
    return all_reduce_sum(per_replica, {});
  }
  /// Sums, in place and in worker order, tensors this worker has already summed over its own
  /// replicas in its own way (a compiled step's products over every replica's rows): the second
  /// half of all_reduce_sum, with the same bits on every worker. Nothing to do for a worker alone.
  virtual void sum_over_workers(std::vector<Tensor>& /*local_sums*/) const {}
  /// One tensor per local replica, every replica's in sync joined along axis 0 in replica order
  /// (undefined when all are): the all-gather of a merge point (the metrics see the global
  /// batch's rows, on every worker). Written into `reused`
  /// when it has the spec and nothing else holds it.
  virtual Tensor all_gather(const std::vector<Tensor>& per_replica, Tensor reused) const = 0;
  Tensor all_gather(const std::vector<Tensor>& per_replica) const { return all_gather(per_replica, Tensor()); }
  /// Throws ValueError unless every worker passed the same `description` of `what` (the model,
  /// the global batch), naming the workers that differ and what each has: a worker started with
  /// another model or batch size fails at its first step, not with mismatched sums. Nothing to
  /// check for a worker alone.
  virtual void check_workers_agree(std::string_view /*what*/, const std::string& /*description*/) const {}
  /// Returns when every worker has called it (an MPI barrier); `why` names the call in errors.
  /// Nothing to wait for alone.
  virtual void wait_for_workers(std::string_view /*why*/) const {}
  /// True on every worker when `value` is true on any: what one worker alone saw (a failed write
  /// of the chief's) made known to all, so that all go the same way instead of some waiting in a
  /// collective the others never reach.
  virtual bool any_worker(bool value) const { return value; }
  /// Every worker's `mine` (each the same length), joined in worker order, on every worker: what
  /// workers reading their own input pipelines tell each other at each step (whether they have
  /// a batch, and its shape). Alone, `mine`.
  virtual std::vector<double> gather_from_workers(std::span<const double> mine) const {
    return {mine.begin(), mine.end()};
  }
  /// The simulated device memory of one replica in bytes; nullopt when unlimited.
  virtual std::optional<std::int64_t> memory_per_replica() const { return std::nullopt; }
};

/// The distribution whose scope is active on this thread, or null (the default strategy).
const Distribution* current();

/// Makes a distribution current on this thread for its lifetime, so that variables created
/// meanwhile belong to it (Variable::distribution). Scopes nest; the outer one returns after.
class DistributionScope {
 public:
  explicit DistributionScope(const Distribution& distribution);
  ~DistributionScope();
  DistributionScope(const DistributionScope&) = delete;
  DistributionScope& operator=(const DistributionScope&) = delete;

 private:
  const Distribution* previous_;
  VariableOwnerScope owner_;
};

/// The distribution a variable was created under (null: the default strategy).
const Distribution* distribution_of(const Variable& variable);

/// Throws ValueError, in Keras's words, naming the first variable that was not created in
/// `distribution`'s scope: "Variable (dense/kernel: float32[784,512]) was not created in the
/// distribution strategy scope of (TPUStrategy) ...". `what` says who uses them ("model 'mlp'").
void require_created_in(const Distribution* distribution, const std::vector<Variable>& variables,
                        const std::string& what);

}  // namespace kestrel::distribute
