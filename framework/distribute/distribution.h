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
#include <string>
#include <vector>

#include "framework/core/tensor.h"
#include "framework/core/variable.h"

namespace kestrel::distribute {

class Distribution {
 public:
  virtual ~Distribution() = default;

  /// The strategy's class name, as errors and logs show it ("TPUStrategy").
  virtual std::string name() const = 0;
  virtual int num_replicas_in_sync() const = 0;
  /// Runs fn(replica) for every replica on the strategy's workers and returns when all are done;
  /// the first exception (by replica order) is rethrown. Replicas are handed to the workers as
  /// they come free (fewer workers than replicas), so fn must not wait for another replica.
  virtual void for_each_replica(const std::function<void(int replica)>& fn) const = 0;
  /// Runs fn(replica) for every replica at once, each on a thread of its own (TF's
  /// MirroredStrategy gives each replica a thread), as one step whose replicas meet at merge
  /// points (merge_call.h): each runs in a ReplicaScope with this strategy and the step's
  /// rendezvous, and in the strategy's scope. Returns when all are done; the first failure by
  /// replica order is rethrown (a ReplicaCancelledError only when no replica failed otherwise).
  /// Kernels inside a replica run serially when the replicas fill the cores. Throws ValueError
  /// when called from inside a replica.
  virtual void call_for_each_replica(const std::function<void(int replica)>& fn) const = 0;
  /// Sums one tensor list per replica, element by element, in replica order (the same bits on
  /// every run): the all-reduce of the gradients at Optimizer::apply's merge point. A position
  /// undefined on every replica stays undefined. A sum is written into reused[k] when that tensor
  /// has its spec and nothing else holds it (last step's sums, given back), else into a new one.
  virtual std::vector<Tensor> all_reduce_sum(const std::vector<std::vector<Tensor>>& per_replica,
                                             std::vector<Tensor> reused) const = 0;
  std::vector<Tensor> all_reduce_sum(const std::vector<std::vector<Tensor>>& per_replica) const {
    return all_reduce_sum(per_replica, {});
  }
  /// One tensor per replica joined along axis 0 in replica order (undefined when all are): the
  /// all-gather of a merge point (the metrics see the global batch's rows). Written into `reused`
  /// when it has the spec and nothing else holds it.
  virtual Tensor all_gather(const std::vector<Tensor>& per_replica, Tensor reused) const = 0;
  Tensor all_gather(const std::vector<Tensor>& per_replica) const { return all_gather(per_replica, Tensor()); }
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
