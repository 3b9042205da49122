// merge_call: where the replicas of a step meet (TF's ReplicaContext.merge_call). Replicas run a
// step side by side, each on its own thread and its own shard; what they share is changed once,
// from every replica's values: the optimizer's update from the sum of their gradients, the
// metrics from all their predictions.
//
//   // inside a replica's step (Optimizer::apply does this):
//   distribute::merge_call("optimizer.apply", gradients, [&](const distribute::MergedValues& merged) {
//     update(merged.sum());   // runs once: every gradient summed over the replicas, in replica order
//   });
//
// Every replica calls merge_call with the same function at the same points of its step. Each
// waits until all have arrived; then the function runs once, on the thread of the replica that
// arrived last, and every replica goes on after it. The function sees the replicas' values only
// combined (MergedValues: summed, or joined along the batch), which is what lets the same step
// compile: there the combinations are collective ops of the program. Outside a step of several
// replicas (one replica, or no strategy), merge_call runs the function at once on this replica's
// values alone, so code written with it runs unchanged everywhere.
//
// A replica that fails cancels the step: replicas waiting at a merge point stop waiting and throw
// ReplicaCancelledError, and whoever runs the replicas rethrows the failure itself. Replicas that
// reach different merge points, or a replica that ends its step while the others wait at one,
// fail the step with a ValueError naming the merge points, never a hang. The waiting is
// ReplicaRendezvous's (replica_rendezvous.h). While a replica's step is traced for compiling, the
// context's MergeTracer takes the call instead (below).
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>
#include <vector>

#include "framework/core/tensor.h"

namespace kestrel::distribute {

/// What a merge function sees: the values every replica brought to the merge point (the same
/// count on each, undefined where a replica had none), combined over the replicas.
class MergedValues {
 public:
  virtual ~MergedValues() = default;
  /// Every value summed over the replicas element by element, in replica order (the same bits on
  /// every run); undefined where it is undefined on every replica.
  virtual std::vector<Tensor> sum() const = 0;
  /// The value at `index` of every replica joined along axis 0, in replica order (a batch's rows
  /// as the global batch has them); undefined where it is undefined on every replica.
  virtual Tensor concat(std::size_t index) const = 0;
};

using MergeFn = std::function<void(const MergedValues& merged)>;

/// Takes merge_call's place while one replica's step is traced for the program every replica
/// runs (jit::ReplicatedFunction): instead of waiting for the others, it runs the merge function
/// on MergedValues whose combinations are collective ops of the program.
class MergeTracer {
 public:
  virtual void merge(std::string_view what, std::vector<Tensor> values, const MergeFn& fn) const = 0;

 protected:
  ~MergeTracer() = default;
};

/// Meets the step's other replicas at `what` and runs fn once over every replica's values, or,
/// outside a step of several replicas, runs fn on these values alone (see the top).
void merge_call(std::string_view what, std::vector<Tensor> values, const MergeFn& fn);

}  // namespace kestrel::distribute
