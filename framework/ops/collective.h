// Collectives: how the replicas of a compiled step combine their values, as ops of its program
// (XLA's AllReduce and AllGather). A replica step's merge points (distribute::merge_call) become
// these ops when the step is traced; jit::ReplicatedFunction runs the program in stages split at
// them, and performs each collective between two stages with the strategy's own all-reduce and
// all-gather, over every replica's value in replica order.
//
//   Tensor summed = ops::cross_replica_sum(gradient, 8);   // the same shape, summed over 8 replicas
//   Tensor rows = ops::all_gather(y_pred, 8);              // [4,10] on each -> [32,10], replica order
//
// A group of one replica is the value itself. Run eagerly in a step whose replicas meet
// (Strategy::run, fit's eager step under a strategy), cross_replica_sum meets the other replicas
// as a merge point does and gives each the sum, in the backward pass too (batch normalization's
// synchronized statistics). Elsewhere there is no other replica, so replicas > 1 is a JitError
// naming the op.
#pragma once

#include <memory>

#include "framework/core/tensor.h"

namespace kestrel::ops {

/// x summed element by element over `replicas` replicas; its gradient is the cotangents' sum.
Tensor cross_replica_sum(const Tensor& x, int replicas);
/// Every replica's x joined along axis 0 in replica order: [replicas * rows, ...]. No gradient
/// crosses replicas (a replica's rows of the cotangent would need its id).
Tensor all_gather(const Tensor& x, int replicas);

}  // namespace kestrel::ops

namespace kestrel {

class Primitive;

namespace detail {

/// The primitive ops::all_gather applies, for the jit's passes, which add graph nodes directly
/// instead of tracing the op.
std::shared_ptr<const Primitive> all_gather_primitive(int replicas);

}  // namespace detail
}  // namespace kestrel
