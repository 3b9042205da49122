// MatmulBiasFusion: a bias added to a matrix product moves into the product (the GEMM adds it as
// it stores C), through the reshape a Dense layer on a sequence puts between them, for a Dense
// bias [N] and an attention projection's [heads, head_dim]. Products read elsewhere, and adds
// that are not one value per column, stay as they were.
#include "framework/jit/passes/matmul_bias_fusion.h"

#include <gtest/gtest.h>

#include "framework/jit/passes/dead_code_elimination.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/matmul.h"
#include "framework/ops/shape_ops.h"
#include "tests/framework/jit/pass_test_support.h"

namespace kestrel::jit {
namespace {

using pass_testing::count_ops;
using pass_testing::expect_same_outputs;
using pass_testing::run_pass;
using pass_testing::trace_graph;

// The matmuls of a graph and how many operands each reads.
std::vector<std::size_t> matmul_arities(const Graph& graph) {
  std::vector<std::size_t> out;
  for (const Node& node : graph.nodes()) {
    if (node.kind == NodeKind::op && node.primitive->id() == OpId::matmul) out.push_back(node.inputs.size());
  }
  return out;
}

Graph fused(Graph graph) {
  EXPECT_TRUE(run_pass(MatmulBiasFusion(), graph)) << graph.to_string();
  run_pass(DeadCodeElimination(), graph);
  return graph;
}

TEST(MatmulBiasFusion, ADenseBiasOnASequenceJoinsItsProduct) {
  const std::vector<Tensor> in{random::normal({4, 6, 8}, random::Key(1)), random::normal({8, 16}, random::Key(2)),
                               random::normal({16}, random::Key(3))};
  // Dense on [batch, positions, features], then GELU: the sum is read by GELU alone here.
  const Graph before = trace_graph(
      [](const std::vector<Tensor>& x) {
        return std::vector<Tensor>{ops::gelu(ops::add(ops::matmul(x[0], x[1]), x[2]))};
      },
      in);
  const Graph after = fused(before);
  EXPECT_EQ(count_ops(after, OpId::add), 0) << after.to_string();
  EXPECT_EQ(matmul_arities(after), std::vector<std::size_t>{3}) << after.to_string();
  EXPECT_EQ(count_ops(after, OpId::reshape), count_ops(before, OpId::reshape)) << after.to_string();
  expect_same_outputs(before, after, in);
}

TEST(MatmulBiasFusion, AnAttentionProjectionsHeadShapedBiasIsFlattenedToTheColumns) {
  const std::vector<Tensor> in{random::normal({24, 8}, random::Key(4)), random::normal({8, 4}, random::Key(5)),
                               random::normal({2, 2}, random::Key(6))};
  // [rows, heads * head_dim] viewed as [batch, positions, heads, head_dim], the bias [heads, head_dim]
  // on the left of the add.
  const Graph before = trace_graph(
      [](const std::vector<Tensor>& x) {
        return std::vector<Tensor>{ops::add(x[2], ops::reshape(ops::matmul(x[0], x[1]), {4, 6, 2, 2}))};
      },
      in);
  const Graph after = fused(before);
  EXPECT_EQ(count_ops(after, OpId::add), 0) << after.to_string();
  EXPECT_EQ(matmul_arities(after), std::vector<std::size_t>{3}) << after.to_string();
  expect_same_outputs(before, after, in);
}

TEST(MatmulBiasFusion, ProductsReadTwiceAndAddsThatAreNotColumnBiasesStay) {
  const Tensor x = random::normal({6, 8}, random::Key(7)), w = random::normal({8, 4}, random::Key(8));
  // The product is also an output: adding the bias into it would change that output.
  Graph graph = trace_graph(
      [](const std::vector<Tensor>& v) {
        const Tensor p = ops::matmul(v[0], v[1]);
        return std::vector<Tensor>{p, ops::add(p, v[2])};
      },
      {x, w, random::normal({4}, random::Key(9))});
  EXPECT_FALSE(run_pass(MatmulBiasFusion(), graph)) << graph.to_string();

  // One value per row ([6, 1]) and a whole matrix ([6, 4]) are not column biases; [4] is.
  for (const Tensor& addend : {random::normal({6, 1}, random::Key(10)), random::normal({6, 4}, random::Key(11)),
                               random::normal({4}, random::Key(12))}) {
    Graph g = trace_graph(
        [](const std::vector<Tensor>& v) { return std::vector<Tensor>{ops::add(ops::matmul(v[0], v[1]), v[2])}; },
        {x, w, addend});
    const Graph before = g;
    EXPECT_EQ(run_pass(MatmulBiasFusion(), g), addend.shape() == Shape{4}) << addend.spec().to_string();
    expect_same_outputs(before, g, {x, w, addend});
  }
}

TEST(MatmulBiasFusion, TheCompiledDenseStepComputesWhatTheEagerOneDoes) {
  const std::vector<Tensor> in{random::normal({32, 20}, random::Key(13)), random::normal({20, 12}, random::Key(14)),
                               random::normal({12}, random::Key(15))};
  const auto dense = [](const std::vector<Tensor>& v) {
    return std::vector<Tensor>{ops::relu(ops::add(ops::matmul(v[0], v[1]), v[2]))};
  };
  const Graph after = fused(trace_graph(dense, in));
  const Tensor want = dense(in)[0];
  const Tensor got = Executor(after).run(in)[0];
  EXPECT_LT(ops::max(ops::abs(ops::subtract(got, want))).item(), 1e-6);
}

}  // namespace
}  // namespace kestrel::jit
