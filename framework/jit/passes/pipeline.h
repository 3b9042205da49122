// The jit compiler's default pass pipeline, in the order of DESIGN.md §4.
//
//   jit::PassPipeline pipeline = jit::default_pipeline();
//   pipeline.run(graph);   // verified after each pass in debug builds
//
// Order, and why:
//   dce                       drop what no output needs, so later passes see less
//   cse                       merge duplicate constants and ops (the backward pass repeats the forward's)
//   constant_folding          compute constant-only ops once; merged constants fold once
//   algebraic_simplification  remove identities, some of which folding exposed (x * 1 with 1 folded)
//   dce                       drop what the rewrites above left unused
// then, in default_pipeline():
//   cast_folding              a loss reads bfloat16 logits in place of their float32 copy
//   transpose_folding         attention's head transposes become strided operands of its matmuls
//   dce                       drop the transposes folded away, so their operands count no reader
//   matmul_scale_folding      a power-of-two factor on a product or its operand becomes the GEMM's
//                             alpha (attention's 1/sqrt(head_dim), forward and backward)
//   matmul_bias_fusion        a bias added to a product joins the GEMM, before elementwise fusion
//                             would take the add into a pass of its own
//   matmul_activation_fusion  so does an activation that alone reads a product (inference programs)
//   dce                       drop the plain products they replaced
//   elementwise_fusion        one kernel per region of elementwise ops; it wants the smallest
//                             graph, and simplification may have removed ops that split a region
//   dce                       drop the scalar constants fusion turned into program constants
// The memory plan runs on the result; it also places in-place updates (outputs aliased to donated
// inputs). Every pass keeps the outputs in order and each output's alias (GraphRewriter::finish).
//
// A step of several replicas first goes whole through replica_step_pipeline(), which rewrites its
// collectives, before split_at_collectives cuts it into parts that each take default_pipeline():
//   sparse_cross_replica_sum  embedding gradients all-gathered as rows, not summed as tables
//   dce                       drop the dense sums it replaced, which would still be performed
#pragma once

#include "framework/jit/pass.h"

namespace kestrel::jit {

/// Adds the simplification passes (dce, cse, constant_folding, algebraic_simplification, dce).
void add_simplification_passes(PassPipeline& pipeline);

/// The pipeline jit::Function compiles with: the simplification passes, then cast_folding,
/// transpose_folding, dce, matmul_scale_folding, matmul_bias_fusion, matmul_activation_fusion, dce,
/// elementwise_fusion and dce.
PassPipeline default_pipeline();

/// The passes over a whole traced step of `replicas` replicas, before it is split at its
/// collectives: sparse_cross_replica_sum, then dce.
PassPipeline replica_step_pipeline(int replicas);

}  // namespace kestrel::jit
