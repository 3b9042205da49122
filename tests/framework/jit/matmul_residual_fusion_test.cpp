// MatmulResidualFusion: a value added to a matrix product of its shape moves into the product (the
// GEMM adds it as it stores C), through the reshape a Dense layer on a sequence puts between them;
// sums of several products become a chain, each product adding the one before; broadcasting
// adds, products read elsewhere and bfloat16 products stay as they were. Fused or not, a program
// gives the same bits, and a residual block's compiled training step gives its eager one's.
#include "framework/jit/passes/matmul_residual_fusion.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/autodiff/gradient_tape.h"
#include "framework/jit/passes/dead_code_elimination.h"
#include "framework/jit/passes/matmul_bias_fusion.h"
#include "framework/jit/passes/pipeline.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/matmul.h"
#include "framework/ops/reduce.h"
#include "framework/ops/shape_ops.h"
#include "tests/framework/jit/pass_test_support.h"

namespace kestrel::jit {
namespace {

using pass_testing::count_ops;
using pass_testing::expect_bitwise_equal;
using pass_testing::expect_same_outputs;
using pass_testing::run_pass;
using pass_testing::trace_graph;

// The matmuls of a graph that add a residual.
int residual_products(const Graph& graph) {
  int count = 0;
  for (const Node& node : graph.nodes()) {
    if (node.kind == NodeKind::op && node.primitive->id() == OpId::matmul &&
        node.primitive->params().find("residual") != std::string::npos) {
      ++count;
    }
  }
  return count;
}

Graph residual_fused(Graph graph) {
  run_pass(MatmulBiasFusion(), graph);
  EXPECT_TRUE(run_pass(MatmulResidualFusion(), graph)) << graph.to_string();
  run_pass(DeadCodeElimination(), graph);
  return graph;
}

TEST(MatmulResidualFusion, ATransformersResidualJoinsItsBiasedProduct) {
  const std::vector<Tensor> in{random::normal({4, 6, 8}, random::Key(1)), random::normal({8, 8}, random::Key(2)),
                               random::normal({8}, random::Key(3))};
  // x + Dense(x) on [batch, positions, features], the residual on the left of the add.
  const Graph before = trace_graph(
      [](const std::vector<Tensor>& x) {
        return std::vector<Tensor>{ops::add(x[0], ops::add(ops::matmul(x[0], x[1]), x[2]))};
      },
      in);
  const Graph after = residual_fused(before);
  EXPECT_EQ(count_ops(after, OpId::add), 0) << after.to_string();
  EXPECT_EQ(count_ops(after, OpId::matmul), 1) << after.to_string();
  EXPECT_EQ(residual_products(after), 1) << after.to_string();
  expect_same_outputs(before, after, in);
}

TEST(MatmulResidualFusion, ASumOfProductsBecomesAChain) {
  // A gradient and the input gradients of three products reading the same value (attention's
  // query, key and value projections): g + h1 w1 + h2 w2 + h3 w3.
  std::vector<Tensor> in{random::normal({24, 8}, random::Key(4))};
  for (std::uint64_t k = 0; k < 3; ++k) {
    in.push_back(random::normal({24, 5}, random::Key(5 + 2 * k)));
    in.push_back(random::normal({5, 8}, random::Key(6 + 2 * k)));
  }
  const Graph before = trace_graph(
      [](const std::vector<Tensor>& x) {
        Tensor sum = x[0];
        for (std::size_t k = 1; k < x.size(); k += 2) sum = ops::add(sum, ops::matmul(x[k], x[k + 1]));
        return std::vector<Tensor>{sum};
      },
      in);
  const Graph after = residual_fused(before);
  EXPECT_EQ(count_ops(after, OpId::add), 0) << after.to_string();
  EXPECT_EQ(residual_products(after), 3) << after.to_string();
  expect_same_outputs(before, after, in);
}

TEST(MatmulResidualFusion, BroadcastsProductsReadTwiceAndBfloat16ProductsStay) {
  const Tensor x = random::normal({6, 8}, random::Key(11)), w = random::normal({8, 4}, random::Key(12));
  const auto stays = [](const Graph& traced, const std::vector<Tensor>& inputs, const std::string& why) {
    Graph graph = traced;
    EXPECT_FALSE(run_pass(MatmulResidualFusion(), graph)) << why << "\n" << graph.to_string();
    expect_same_outputs(traced, graph, inputs);
  };
  // One value per row, and one per column (a bias, MatmulBiasFusion's), broadcast over the product.
  for (const Tensor& addend : {random::normal({6, 1}, random::Key(13)), random::normal({4}, random::Key(14))}) {
    stays(trace_graph(
              [](const std::vector<Tensor>& v) { return std::vector<Tensor>{ops::add(ops::matmul(v[0], v[1]), v[2])}; },
              {x, w, addend}),
          {x, w, addend}, "a broadcast addend " + addend.spec().to_string());
  }
  // The product is also an output: adding the residual into it would change that output.
  const Tensor r = random::normal({6, 4}, random::Key(15));
  stays(trace_graph(
            [](const std::vector<Tensor>& v) {
              const Tensor p = ops::matmul(v[0], v[1]);
              return std::vector<Tensor>{p, ops::add(p, v[2])};
            },
            {x, w, r}),
        {x, w, r}, "a product read twice");
  // A product added to itself.
  stays(trace_graph(
            [](const std::vector<Tensor>& v) {
              const Tensor p = ops::matmul(v[0], v[1]);
              return std::vector<Tensor>{ops::add(p, p)};
            },
            {x, w}),
        {x, w}, "a product added to itself");
  // bfloat16: the separate add rounds the product first.
  const std::vector<Tensor> low{ops::cast(x, DType::bfloat16), ops::cast(w, DType::bfloat16),
                                ops::cast(r, DType::bfloat16)};
  stays(trace_graph(
            [](const std::vector<Tensor>& v) { return std::vector<Tensor>{ops::add(ops::matmul(v[0], v[1]), v[2])}; },
            low),
        low, "a bfloat16 product");
}

// A residual block's SGD step: y = x + relu(x w1 + b1) w2 + b2 (on a sequence), its loss and
// gradients. in: x, w1, b1, w2, b2; out: the loss, then each parameter after one step.
std::vector<Tensor> residual_block_step(const std::vector<Tensor>& in) {
  const std::vector<Tensor> params(in.begin() + 1, in.end());
  GradientTape tape;
  for (const Tensor& p : params) tape.watch(p);
  const Tensor hidden = ops::relu(ops::add(ops::matmul(in[0], params[0]), params[1]));
  const Tensor y = ops::add(in[0], ops::add(ops::matmul(hidden, params[2]), params[3]));
  const Tensor loss = ops::mean(ops::multiply(y, y));
  const std::vector<Tensor> grads = tape.gradient(loss, params);
  std::vector<Tensor> out{loss};
  for (std::size_t k = 0; k < params.size(); ++k) out.push_back(params[k] - grads[k] * 0.1);
  return out;
}

TEST(MatmulResidualFusion, TheCompiledResidualBlockStepComputesWhatTheEagerOneDoes) {
  const std::vector<Tensor> in{random::normal({4, 16, 32}, random::Key(16)), random::normal({32, 64}, random::Key(17)),
                               random::normal({64}, random::Key(18)), random::normal({64, 32}, random::Key(19)),
                               random::normal({32}, random::Key(20))};
  Graph graph = trace_graph(residual_block_step, in);
  default_pipeline().run(graph);
  EXPECT_GE(residual_products(graph), 1) << graph.to_string();
  const std::vector<Tensor> eager = residual_block_step(in);
  const std::vector<Tensor> compiled = Executor(graph).run(in);
  ASSERT_EQ(compiled.size(), eager.size());
  for (std::size_t i = 0; i < eager.size(); ++i) expect_bitwise_equal(compiled[i], eager[i], std::to_string(i));
}

}  // namespace
}  // namespace kestrel::jit
