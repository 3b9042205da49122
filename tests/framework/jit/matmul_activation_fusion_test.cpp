// MatmulActivationFusion: a relu or GELU (either form) applied to a (biased) product, and read by
// nothing else, moves into the GEMM, the same bits as before; where the product is read elsewhere
// too (as a training step keeps GELU's input for its gradient), the activation stays apart.
#include "framework/jit/passes/matmul_activation_fusion.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "framework/jit/passes/dead_code_elimination.h"
#include "framework/jit/passes/matmul_bias_fusion.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/matmul.h"
#include "tests/framework/jit/pass_test_support.h"

namespace kestrel::jit {
namespace {

using pass_testing::count_ops;
using pass_testing::run_pass;
using pass_testing::trace_graph;

const std::vector<Tensor> kDenseInputs{random::normal({4, 6, 8}, random::Key(1)),
                                       random::normal({8, 16}, random::Key(2)), random::normal({16}, random::Key(3))};

// The one matmul of a graph.
const Node& only_matmul(const Graph& graph) {
  for (const Node& node : graph.nodes()) {
    if (node.kind == NodeKind::op && node.primitive->id() == OpId::matmul) return node;
  }
  ADD_FAILURE() << "no matmul in\n" << graph.to_string();
  return graph.nodes().front();
}

TEST(MatmulActivationFusion, ADenseLayersActivationJoinsItsBiasedProduct) {
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> activations = {
      {"activation=relu", [](const Tensor& z) { return ops::relu(z); }},
      {"activation=gelu", [](const Tensor& z) { return ops::gelu(z); }},
      {"activation=gelu_tanh", [](const Tensor& z) { return ops::gelu(z, {.approximate = true}); }}};
  for (const auto& [params, activation] : activations) {
    SCOPED_TRACE(params);
    const auto dense = [&activate = activation](const std::vector<Tensor>& x) {
      return std::vector<Tensor>{activate(ops::add(ops::matmul(x[0], x[1]), x[2]))};
    };
    const Graph before = trace_graph(dense, kDenseInputs);
    Graph after = before;
    ASSERT_TRUE(run_pass(MatmulBiasFusion(), after));
    ASSERT_TRUE(run_pass(MatmulActivationFusion(), after));
    run_pass(DeadCodeElimination(), after);
    // The input flattened to rows, the biased product with its activation, and its reshape back.
    EXPECT_EQ(after.num_ops(), 3) << after.to_string();
    EXPECT_NE(only_matmul(after).primitive->params().find(params), std::string::npos);
    EXPECT_EQ(only_matmul(after).inputs.size(), 3u);
    pass_testing::expect_same_outputs(before, after, kDenseInputs);
  }
}

TEST(MatmulActivationFusion, AProductAlsoReadElsewhereKeepsItsActivationApart) {
  // The pre-activation is an output too.
  Graph graph = trace_graph(
      [](const std::vector<Tensor>& x) {
        const Tensor z = ops::matmul(x[0], x[1]);
        return std::vector<Tensor>{z, ops::relu(z)};
      },
      {random::normal({6, 8}, random::Key(4)), random::normal({8, 4}, random::Key(5))});
  EXPECT_FALSE(run_pass(MatmulActivationFusion(), graph)) << graph.to_string();
  // An elementwise op that is not an activation the GEMM applies stays too.
  Graph exp =
      trace_graph([](const std::vector<Tensor>& x) { return std::vector<Tensor>{ops::exp(ops::matmul(x[0], x[1]))}; },
                  {random::normal({6, 8}, random::Key(4)), random::normal({8, 4}, random::Key(5))});
  EXPECT_FALSE(run_pass(MatmulActivationFusion(), exp)) << exp.to_string();
}

}  // namespace
}  // namespace kestrel::jit
