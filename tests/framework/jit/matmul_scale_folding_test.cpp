// MatmulScaleFolding: attention's scaled queries, and the same factor on their gradient, become the
// alpha of the products beside them, forward and backward, with the bits the multiplies gave; a
// factor that is not a power of two, a biased product, and a scaled tensor something else reads
// keep their multiply.
#include "framework/jit/passes/matmul_scale_folding.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/jit/passes/dead_code_elimination.h"
#include "framework/jit/passes/transpose_folding.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/matmul.h"
#include "tests/framework/jit/attention_graphs.h"
#include "tests/framework/jit/pass_test_support.h"

namespace kestrel::jit {
namespace {

using pass_testing::count_ops;
using pass_testing::run_pass;
using pass_testing::trace_graph;

using attention_graphs::kQueryScale;
using attention_graphs::projections;

// The scales of the graph's matmuls, in order ("1" where there is none).
std::vector<std::string> scales(const Graph& graph) {
  std::vector<std::string> out;
  for (const Node& node : graph.nodes()) {
    if (node.kind != NodeKind::op || node.primitive->id() != OpId::matmul) continue;
    const std::string params = node.primitive->params();
    const std::size_t at = params.find("scale=");
    out.push_back(at == std::string::npos ? "1" : params.substr(at + 6));
  }
  return out;
}

// How many multiplies by a one-value constant the graph has.
int count_scalings(const Graph& graph) {
  int count = 0;
  for (ValueId id = 0; id < graph.size(); ++id) {
    if (!graph.is_op(id, OpId::multiply)) continue;
    for (ValueId in : graph.node(id).inputs) {
      if (graph.node(in).kind == NodeKind::constant && graph.node(in).spec.shape.numel() == 1) ++count;
    }
  }
  return count;
}

Graph scale_folded(const Graph& graph) {
  Graph out = graph;
  run_pass(TransposeFolding(), out);
  run_pass(DeadCodeElimination(), out);  // the transposes folded away no longer read the queries
  EXPECT_TRUE(run_pass(MatmulScaleFolding(), out)) << out.to_string();
  run_pass(DeadCodeElimination(), out);
  return out;
}

TEST(MatmulScaleFolding, AttentionsQueryScaleBecomesTheScoresAlpha) {
  const std::vector<Tensor> inputs = projections(DType::float32);
  const Graph before = trace_graph(
      [](const std::vector<Tensor>& x) {
        return std::vector<Tensor>{attention_graphs::attention(x[0], x[1], x[2], kQueryScale)};
      },
      inputs);
  ASSERT_EQ(count_scalings(before), 1);
  const Graph after = scale_folded(before);
  EXPECT_EQ(count_ops(after, OpId::multiply), 0) << after.to_string();
  EXPECT_EQ(scales(after), (std::vector<std::string>{"0.25", "1"}));
  pass_testing::expect_same_outputs(before, after, inputs);
}

TEST(MatmulScaleFolding, EveryScaleOfAnAttentionStepGoesInFloat32AndBfloat16) {
  for (const DType dtype : {DType::float32, DType::bfloat16}) {
    SCOPED_TRACE(to_string(dtype));
    const std::vector<Tensor> inputs = projections(dtype);
    const Graph before = trace_graph(
        [](const std::vector<Tensor>& x) { return attention_graphs::attention_with_gradients(x, kQueryScale); },
        inputs);
    // The scaled queries, and the factor on their gradient.
    ASSERT_EQ(count_scalings(before), 2) << before.to_string();
    const Graph after = scale_folded(before);
    EXPECT_EQ(count_scalings(after), 0) << after.to_string();
    EXPECT_EQ(count_ops(after, OpId::matmul), count_ops(before, OpId::matmul));
    // The scores and the keys' gradient read the queries unscaled; the queries' gradient is written
    // scaled.
    std::vector<std::string> scaled = scales(after);
    std::erase(scaled, "1");
    EXPECT_EQ(scaled, (std::vector<std::string>(3, "0.25"))) << after.to_string();
    pass_testing::expect_same_outputs(before, after, inputs);
  }
}

TEST(MatmulScaleFolding, AProductScaledAfterwardsTakesTheFactorWhicheverSideItIsOn) {
  const std::vector<Tensor> inputs{random::normal({6, 8}, random::Key(4)), random::normal({8, 4}, random::Key(5))};
  const Graph before = trace_graph(
      [](const std::vector<Tensor>& x) {
        const Tensor product = ops::matmul(x[0], x[1]);
        return std::vector<Tensor>{ops::multiply(ops::scalar_like(product, -8.0), product)};
      },
      inputs);
  const Graph after = scale_folded(before);
  EXPECT_EQ(after.num_ops(), 1) << after.to_string();
  EXPECT_EQ(scales(after), (std::vector<std::string>{"-8"}));
  pass_testing::expect_same_outputs(before, after, inputs);
}

TEST(MatmulScaleFolding, MultipliesTheGemmCannotTakeStay) {
  const std::vector<Tensor> inputs{random::normal({6, 8}, random::Key(4)), random::normal({8, 4}, random::Key(5)),
                                   random::normal({4}, random::Key(6))};
  const auto keeps_its_multiply = [&](const pass_testing::TracedFn& fn) {
    Graph graph = trace_graph(fn, inputs);
    EXPECT_FALSE(run_pass(MatmulScaleFolding(), graph)) << graph.to_string();
  };
  // 0.3 is no power of two: (0.3 a) b and 0.3 (a b) round differently.
  keeps_its_multiply([](const std::vector<Tensor>& x) {
    return std::vector<Tensor>{ops::matmul(ops::multiply(x[0], ops::scalar_like(x[0], 0.3)), x[1])};
  });
  // The GEMM scales before it adds a bias, so a biased product keeps the factor on its operand
  // and on its result.
  keeps_its_multiply([](const std::vector<Tensor>& x) {
    return std::vector<Tensor>{ops::matmul(ops::multiply(x[0], ops::scalar_like(x[0], 0.5)), x[1], {.bias = x[2]})};
  });
  keeps_its_multiply([](const std::vector<Tensor>& x) {
    const Tensor product = ops::matmul(x[0], x[1], {.bias = x[2]});
    return std::vector<Tensor>{ops::multiply(product, ops::scalar_like(product, 0.5))};
  });
  // The scaled operand is an output too, and the product is read by another op too.
  keeps_its_multiply([](const std::vector<Tensor>& x) {
    const Tensor scaled = ops::multiply(x[0], ops::scalar_like(x[0], 0.5));
    return std::vector<Tensor>{scaled, ops::matmul(scaled, x[1])};
  });
  keeps_its_multiply([](const std::vector<Tensor>& x) {
    const Tensor product = ops::matmul(x[0], x[1]);
    return std::vector<Tensor>{ops::exp(product), ops::multiply(product, ops::scalar_like(product, 0.5))};
  });
  // A factor of more than one value broadcasts: no scalar.
  keeps_its_multiply([](const std::vector<Tensor>& x) {
    const Tensor product = ops::matmul(x[0], x[1]);
    return std::vector<Tensor>{ops::multiply(product, x[2])};
  });
}

}  // namespace
}  // namespace kestrel::jit
