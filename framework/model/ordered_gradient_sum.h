// OrderedGradientSum: the replicas' gradients summed in replica order while the replicas run
// (internal to ReplicaSteps).
//
//   OrderedGradientSum sum(8);
//   // on replica r's thread, once its gradients are ready:
//   sum.add(r, std::move(gradients));   // waits for replicas 0 .. r-1 to have added theirs
//   std::vector<Tensor> total = sum.take();
//
// Summing after every replica ran would keep all their gradient sets alive at once: 8 copies of
// the model's size. Here each replica adds its set as soon as the replicas before it have, and
// drops it, so only the replicas running at the same time hold one. The order is fixed, as the
// all-reduce's is (((g0 + g1) + g2) + ...), so the sum is the same bits on every run; bfloat16
// gradients are summed in float32 and rounded once, as the all-reduce sums them.
#pragma once

#include <condition_variable>
#include <mutex>
#include <vector>

#include "framework/core/tensor.h"

namespace kestrel::detail {

class OrderedGradientSum {
 public:
  explicit OrderedGradientSum(int replicas) : replicas_(replicas) {}

  /// Adds replica r's gradients (undefined where no gradient reached a weight, in every replica)
  /// once every lower replica has added its own. Returns without adding after abandon().
  void add(int replica, std::vector<Tensor> gradients);
  /// A replica failed: replicas waiting for their turn stop waiting (the failure is rethrown by
  /// whoever runs the replicas).
  void abandon();
  /// The sum, once every replica added.
  std::vector<Tensor> take();

 private:
  int replicas_;
  std::mutex mutex_;
  std::condition_variable turn_;
  int next_ = 0;  // the replica whose turn it is
  bool abandoned_ = false;
  std::vector<Tensor> total_;  // float32 where the gradients are bfloat16
  std::vector<DType> dtypes_;  // the gradients' own
};

}  // namespace kestrel::detail
