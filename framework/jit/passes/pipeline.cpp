#include "framework/jit/passes/pipeline.h"

#include <memory>

#include "framework/jit/passes/algebraic_simplification.h"
#include "framework/jit/passes/cast_folding.h"
#include "framework/jit/passes/common_subexpression_elimination.h"
#include "framework/jit/passes/constant_folding.h"
#include "framework/jit/passes/dead_code_elimination.h"
#include "framework/jit/passes/elementwise_fusion.h"
#include "framework/jit/passes/matmul_activation_fusion.h"
#include "framework/jit/passes/matmul_bias_fusion.h"
#include "framework/jit/passes/matmul_residual_fusion.h"
#include "framework/jit/passes/matmul_scale_folding.h"
#include "framework/jit/passes/sparse_cross_replica_sum.h"
#include "framework/jit/passes/transpose_folding.h"

namespace kestrel::jit {

void add_simplification_passes(PassPipeline& pipeline) {
  pipeline.add(std::make_unique<DeadCodeElimination>());
  pipeline.add(std::make_unique<CommonSubexpressionElimination>());
  pipeline.add(std::make_unique<ConstantFolding>());
  pipeline.add(std::make_unique<AlgebraicSimplification>());
  pipeline.add(std::make_unique<DeadCodeElimination>());
}

PassPipeline default_pipeline() {
  PassPipeline pipeline;
  add_simplification_passes(pipeline);
  // A loss reads bfloat16 logits in place of their float32 copy, before fusion would take the
  // casts into programs of their own.
  pipeline.add(std::make_unique<CastFolding>());
  // Attention's head transposes become strided operands of the matmuls beside them.
  pipeline.add(std::make_unique<TransposeFolding>());
  pipeline.add(std::make_unique<DeadCodeElimination>());
  // Attention's 1/sqrt(head_dim), a power of two at the usual head sizes, becomes the alpha of the
  // products beside it, forward and backward.
  pipeline.add(std::make_unique<MatmulScaleFolding>());
  // Biases, then residuals, then activations read by nothing else, join their matmuls before
  // elementwise fusion would take them into passes of their own (in the GEMM's order: product,
  // bias, residual, activation); the products they replace are left for the DCE.
  pipeline.add(std::make_unique<MatmulBiasFusion>());
  pipeline.add(std::make_unique<MatmulResidualFusion>());
  pipeline.add(std::make_unique<MatmulActivationFusion>());
  pipeline.add(std::make_unique<DeadCodeElimination>());
  pipeline.add(std::make_unique<ElementwiseFusion>());
  pipeline.add(std::make_unique<DeadCodeElimination>());
  // In-place updates need no pass: the memory plan writes an output aliased to a donated input
  // into that input's buffer (memory_plan.h), which outputs kept by position make possible.
  return pipeline;
}

PassPipeline replica_step_pipeline(int replicas) {
  PassPipeline pipeline;
  pipeline.add(std::make_unique<SparseCrossReplicaSum>(replicas));
  pipeline.add(std::make_unique<DeadCodeElimination>());
  return pipeline;
}

}  // namespace kestrel::jit
