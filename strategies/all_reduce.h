// all_reduce_sum: one list of tensors per replica in, their element-wise sums out, the same bits on
// every run.
//
//   // grads[r][k]: replica r's gradient for variable k
//   std::vector<Tensor> summed = distribute::all_reduce_sum(grads);   // summed[k] = sum over r
//
// Every element is summed in replica order, (((t0 + t1) + t2) + ...), whatever the number of
// threads or their timing, so a multi-replica step is bitwise reproducible. A job of several
// workers then sums the workers' results (sum_over_workers), again in a fixed order.
#pragma once

#include <vector>

#include "framework/core/tensor.h"

namespace kestrel::distribute {

/// For every position k, a new tensor holding the element-wise sum of per_replica[r][k] over
/// the replicas r = 0, 1, 2, ... in that order. Per dtype:
///   float32:        summed in float32, in replica order;
///   bfloat16:       summed in float32 in replica order and rounded to bfloat16 once, at the end
///                   (rounding after every add would lose the small gradients of later replicas);
///   int32, int64:   summed exactly, wrapping modulo 2^32 or 2^64 on overflow;
///   bool:           rejected (TypeError): cast to int32 to count.
/// A position undefined in every replica (a variable no gradient reached) gives an undefined
/// tensor. Errors name what is wrong: no replicas or a different tensor count (ValueError), a
/// position defined in some replicas only (ValueError), a different shape (ShapeError) or dtype
/// (TypeError) than replica 0's, a symbolic tensor made while tracing (JitError).
///
/// One pass over memory: each output element is read from every replica once and written once,
/// in chunks spread over the intra-op pool (parallel_for; inline under a SerialKernelsScope). It
/// allocates nothing but the outputs: the returned vector and one buffer per defined position,
/// unless `reused` gives one (reused[k], when it has position k's spec and nothing else holds it:
/// last step's sums given back, so a steady step allocates nothing).
std::vector<Tensor> all_reduce_sum(const std::vector<std::vector<Tensor>>& per_replica,
                                   std::vector<Tensor> reused = {});

class Workers;

/// Each defined tensor of `sums` (this worker's sums over its replicas, which nothing else holds)
/// becomes its sum over the workers, in worker order (Workers::sum), in place: the second half of
/// a multi-worker all-reduce. The tensors travel packed, one message per kind: float32 and
/// bfloat16 as float32 (bfloat16 rounded once more at the end), int32 and int64 as int64 (int32
/// wrapping modulo 2^32 as on one worker). Nothing happens for a worker alone.
void sum_over_workers(const Workers& workers, std::vector<Tensor>& sums);

}  // namespace kestrel::distribute
