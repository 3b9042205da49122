// TransposeFolding: attention's head transposes, forward and backward, become strided operands
// and products of the matmuls beside them, with the same bits as the copies gave; transposes of
// other axes, and those a product or another op still needs, stay.
#include "framework/jit/passes/transpose_folding.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/jit/passes/dead_code_elimination.h"
#include "framework/ops/matmul.h"
#include "framework/ops/nn.h"
#include "framework/ops/shape_ops.h"
#include "tests/framework/jit/attention_graphs.h"
#include "tests/framework/jit/pass_test_support.h"

namespace kestrel::jit {
namespace {

using pass_testing::count_ops;
using pass_testing::run_pass;
using pass_testing::trace_graph;

using attention_graphs::attention;
using attention_graphs::attention_with_gradients;
using attention_graphs::heads_forward;
using attention_graphs::kBatch;
using attention_graphs::kHeads;
using attention_graphs::kTokens;
using attention_graphs::projections;

Graph folded(const Graph& graph) {
  Graph out = graph;
  EXPECT_TRUE(run_pass(TransposeFolding(), out)) << out.to_string();
  run_pass(DeadCodeElimination(), out);
  return out;
}

// The heads layouts the graph's matmuls take, one "a b out" word each, in order.
std::vector<std::string> layouts(const Graph& graph) {
  std::vector<std::string> out;
  for (const Node& node : graph.nodes()) {
    if (node.kind != NodeKind::op || node.primitive->id() != OpId::matmul) continue;
    const detail::MatmulHeadsLayout heads = *detail::matmul_heads_layout(*node.primitive);
    out.push_back(std::string(heads.a ? "a" : "-") + (heads.b ? "b" : "-") + (heads.out ? "o" : "-"));
  }
  return out;
}

TEST(TransposeFolding, AttentionForwardReadsAndWritesTheHeadsInPlace) {
  const std::vector<Tensor> inputs = projections(DType::float32);
  const Graph before = trace_graph(
      [](const std::vector<Tensor>& x) { return std::vector<Tensor>{attention(x[0], x[1], x[2])}; }, inputs);
  ASSERT_EQ(count_ops(before, OpId::transpose), 4);
  const Graph after = folded(before);
  EXPECT_EQ(count_ops(after, OpId::transpose), 0) << after.to_string();
  // Scores read q and k in place; the context reads v in place and writes [B, T, H, D].
  EXPECT_EQ(layouts(after), (std::vector<std::string>{"ab-", "-bo"}));
  pass_testing::expect_same_outputs(before, after, inputs);
}

TEST(TransposeFolding, EveryTransposeOfAnAttentionStepGoesInFloat32AndBfloat16) {
  for (const DType dtype : {DType::float32, DType::bfloat16}) {
    SCOPED_TRACE(to_string(dtype));
    const std::vector<Tensor> inputs = projections(dtype);
    const Graph before = trace_graph([](const std::vector<Tensor>& x) { return attention_with_gradients(x); }, inputs);
    ASSERT_GE(count_ops(before, OpId::transpose), 8) << before.to_string();
    const Graph after = folded(before);
    EXPECT_EQ(count_ops(after, OpId::transpose), 0) << after.to_string();
    EXPECT_EQ(count_ops(after, OpId::matmul), count_ops(before, OpId::matmul));
    pass_testing::expect_same_outputs(before, after, inputs);
  }
}

TEST(TransposeFolding, TransposesOthersNeedStay) {
  const std::vector<Tensor> inputs = projections(DType::float32);
  // The moved heads are an output too: the matmul reads past the transpose, which stays.
  Graph shared = trace_graph(
      [](const std::vector<Tensor>& x) {
        const Tensor q = heads_forward(x[0]);
        return std::vector<Tensor>{q, ops::matmul(q, heads_forward(x[1]), {.transpose_b = true})};
      },
      inputs);
  const Graph shared_before = shared;
  shared = folded(shared);
  EXPECT_EQ(count_ops(shared, OpId::transpose), 1) << shared.to_string();
  pass_testing::expect_same_outputs(shared_before, shared, inputs);

  // A product that is an output as it is keeps its transpose after it.
  Graph product = trace_graph(
      [](const std::vector<Tensor>& x) {
        const Tensor scores = ops::matmul(x[0], x[1], {.transpose_b = true});
        return std::vector<Tensor>{scores, heads_forward(scores)};
      },
      inputs);
  EXPECT_FALSE(run_pass(TransposeFolding(), product)) << product.to_string();

  // Other permutations are not the heads layout.
  Graph other = trace_graph(
      [](const std::vector<Tensor>& x) {
        return std::vector<Tensor>{ops::matmul(ops::transpose(x[0], {1, 0, 2, 3}), ops::transpose(x[1], {1, 0, 3, 2}))};
      },
      inputs);
  EXPECT_FALSE(run_pass(TransposeFolding(), other)) << other.to_string();

  // A product that adds a residual reads it in the product's layout: its transpose stays after it.
  const std::vector<Tensor> with_residual{inputs[0], inputs[1],
                                          random::normal({kBatch, kTokens, kHeads, kHeads}, random::Key(9))};
  Graph residual = trace_graph(
      [](const std::vector<Tensor>& x) {
        return std::vector<Tensor>{heads_forward(ops::matmul(x[0], x[1], {.transpose_b = true, .residual = x[2]}))};
      },
      with_residual);
  const Graph residual_before = residual;
  EXPECT_FALSE(run_pass(TransposeFolding(), residual)) << residual.to_string();
  pass_testing::expect_same_outputs(residual_before, residual, with_residual);
}

TEST(TransposeFolding, AttentionWithoutHeadsRunsAsNothing) {
  // Zero heads: the folded matmuls have no matrices to multiply, as the transposed ones had none.
  std::vector<Tensor> inputs;
  for (std::uint64_t seed : {1, 2, 3}) inputs.push_back(random::normal({2, 5, 0, 8}, random::Key(seed)));
  const Graph before = trace_graph(
      [](const std::vector<Tensor>& x) { return std::vector<Tensor>{attention(x[0], x[1], x[2])}; }, inputs);
  const Graph after = folded(before);
  EXPECT_EQ(count_ops(after, OpId::transpose), 0) << after.to_string();
  pass_testing::expect_same_outputs(before, after, inputs);
}

TEST(TransposeFolding, AHeadsLayoutMatmulNamesItsLayoutAndChecksItsOperands) {
  const Tensor q = random::normal({2, 5, 3, 4}, random::Key(4));
  const Graph graph = folded(trace_graph(
      [](const std::vector<Tensor>& x) {
        return std::vector<Tensor>{ops::matmul(heads_forward(x[0]), heads_forward(x[0]), {.transpose_b = true})};
      },
      {q}));
  const Node* matmul = nullptr;
  for (const Node& node : graph.nodes()) {
    if (node.kind == NodeKind::op && node.primitive->id() == OpId::matmul) matmul = &node;
  }
  ASSERT_NE(matmul, nullptr);
  EXPECT_NE(matmul->primitive->params().find("heads_a, heads_b"), std::string::npos) << matmul->primitive->params();
  // A 2-D operand has no heads axis.
  const TensorSpec matrix{Shape{5, 4}, DType::float32};
  EXPECT_THROW(matmul->primitive->infer(std::vector<TensorSpec>{matrix, matrix}), ShapeError);
}

}  // namespace
}  // namespace kestrel::jit
