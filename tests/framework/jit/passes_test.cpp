// DCE, CSE and constant folding on traced graphs: structure after each pass, and bit-identical
// outputs before and after.
#include <gtest/gtest.h>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/jit/passes/common_subexpression_elimination.h"
#include "framework/jit/passes/constant_folding.h"
#include "framework/jit/passes/dead_code_elimination.h"
#include "framework/ops/ops.h"
#include "tests/framework/jit/pass_test_support.h"
#include "tests/support/error_message.h"

namespace kestrel::jit {
namespace {

using pass_testing::count_nodes;
using pass_testing::count_ops;
using pass_testing::expect_same_outputs;
using pass_testing::run_pass;
using pass_testing::trace_graph;

TEST(DeadCodeElimination, DropsOpsAndConstantsNoOutputNeeds) {
  Tensor x = random::normal({3, 4}, random::Key(1));
  Graph g = trace_graph(
      [](const std::vector<Tensor>& in) {
        Tensor unused = ops::log(ops::abs(in[0])) * 2.0;  // a dead chain with its own constant
        (void)unused;
        return std::vector<Tensor>{ops::exp(in[0])};
      },
      {x});
  ASSERT_EQ(g.num_ops(), 4);
  const Graph before = g;
  EXPECT_TRUE(run_pass(DeadCodeElimination(), g));
  EXPECT_EQ(g.num_ops(), 1);
  EXPECT_EQ(count_ops(g, OpId::exp), 1);
  EXPECT_EQ(count_nodes(g, NodeKind::constant), 0);
  expect_same_outputs(before, g, {x});
  EXPECT_FALSE(run_pass(DeadCodeElimination(), g));  // nothing left to drop
}

TEST(DeadCodeElimination, KeepsUnusedInputsInTheirPositions) {
  Tensor a = Tensor::ones({2});
  Tensor b = Tensor::zeros({5}, DType::int32);
  Tensor c = Tensor::from_vector<float>({1, -2, 3}, {3});
  Graph g = trace_graph(
      [](const std::vector<Tensor>& in) {
        (void)ops::exp(in[0]);
        return std::vector<Tensor>{ops::negative(in[2])};
      },
      {a, b, c});
  const Graph before = g;
  EXPECT_TRUE(run_pass(DeadCodeElimination(), g));
  EXPECT_EQ(g.num_ops(), 1);
  ASSERT_EQ(g.inputs().size(), 3u);
  EXPECT_EQ(g.node(g.inputs()[0]).name, "in0");
  EXPECT_EQ(g.node(g.inputs()[1]).name, "in1");
  EXPECT_EQ(g.node(g.inputs()[2]).name, "in2");
  EXPECT_EQ(g.node(g.inputs()[1]).spec, b.spec());
  expect_same_outputs(before, g, {a, b, c});
}

TEST(DeadCodeElimination, KeepsAnOutputThatIsAnInputOrAConstant) {
  Tensor x = Tensor::ones({2});
  Tensor k = Tensor::from_vector<float>({4, 5}, {2});
  Graph g = trace_graph([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0], k}; }, {x});
  EXPECT_FALSE(run_pass(DeadCodeElimination(), g));
  EXPECT_EQ(count_nodes(g, NodeKind::constant), 1);
}

TEST(CommonSubexpressionElimination, MergesRepeatedChainsAndTheirConstants) {
  Tensor x = random::normal({4, 5}, random::Key(2));
  Graph g = trace_graph(
      [](const std::vector<Tensor>& in) {
        Tensor a = ops::tanh(ops::exp(in[0]) * 2.0);  // each `* 2.0` captures its own scalar
        Tensor b = ops::tanh(ops::exp(in[0]) * 2.0);
        return std::vector<Tensor>{a + b, a};
      },
      {x});
  ASSERT_EQ(count_ops(g, OpId::exp), 2);
  ASSERT_EQ(count_nodes(g, NodeKind::constant), 2);
  const Graph before = g;
  EXPECT_TRUE(run_pass(CommonSubexpressionElimination(), g));
  EXPECT_EQ(count_ops(g, OpId::exp), 1);
  EXPECT_EQ(count_ops(g, OpId::multiply), 1);
  EXPECT_EQ(count_ops(g, OpId::tanh), 1);
  EXPECT_EQ(count_ops(g, OpId::add), 1);
  EXPECT_EQ(count_nodes(g, NodeKind::constant), 1);
  // The add reads the one tanh twice, and the second output is that same tanh.
  const Node& add = g.node(g.outputs()[0]);
  ASSERT_EQ(add.inputs.size(), 2u);
  EXPECT_EQ(add.inputs[0], add.inputs[1]);
  EXPECT_EQ(add.inputs[0], g.outputs()[1]);
  expect_same_outputs(before, g, {x});
  EXPECT_FALSE(run_pass(CommonSubexpressionElimination(), g));
}

TEST(CommonSubexpressionElimination, KeepsOpsWithDifferentParamsOrInputs) {
  Tensor x = random::normal({3, 4}, random::Key(3));
  Tensor y = random::normal({3, 4}, random::Key(4));
  Graph g = trace_graph(
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{ops::gelu(in[0]),
                                   ops::gelu(in[0], {.approximate = true}),  // params differ
                                   ops::sum(in[0], {.axes = {0}}),
                                   ops::sum(in[0], {.axes = {1}}),
                                   ops::exp(in[0]),
                                   ops::exp(in[1]),  // inputs differ
                                   ops::subtract(in[0], in[1]),
                                   ops::subtract(in[1], in[0])};  // order matters
      },
      {x, y});
  const std::int64_t ops_before = g.num_ops();
  EXPECT_FALSE(run_pass(CommonSubexpressionElimination(), g));
  EXPECT_EQ(g.num_ops(), ops_before);
}

TEST(CommonSubexpressionElimination, MergesConstantsByBytesAndBigOnesByBuffer) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3}, {3});
  Tensor big = random::normal({64, 32}, random::Key(5));  // 8 KiB: over the compared size
  Tensor big_alias = Tensor::from_buffer(big.buffer(), big.shape(), big.dtype());
  Tensor big_copy = Tensor::from_vector<float>(big.to_vector<float>(), big.shape());
  Tensor zero = Tensor::scalar(0.0);
  Tensor negative_zero = Tensor::scalar(-0.0);
  Graph g = trace_graph(
      [&](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{in[0] + 3.0,           in[0] + 3.0,   in[0] + 4.0,         in[0] + zero,
                                   in[0] + negative_zero, ops::sum(big), ops::sum(big_alias), ops::sum(big_copy)};
      },
      {x});
  ASSERT_EQ(count_nodes(g, NodeKind::constant), 8);
  const Graph before = g;
  EXPECT_TRUE(run_pass(CommonSubexpressionElimination(), g));
  // 3.0 (merged), 4.0, 0.0 and -0.0 (different bytes), big and its alias (one buffer), the copy.
  EXPECT_EQ(count_nodes(g, NodeKind::constant), 6);
  EXPECT_EQ(count_ops(g, OpId::add), 4);
  EXPECT_EQ(count_ops(g, OpId::sum), 2);
  EXPECT_EQ(g.outputs()[0], g.outputs()[1]);
  EXPECT_EQ(g.outputs()[5], g.outputs()[6]);
  EXPECT_NE(g.outputs()[5], g.outputs()[7]);
  expect_same_outputs(before, g, {x});
}

TEST(ConstantFolding, FoldsAChainOfConstantOps) {
  Tensor x = random::normal({2, 4}, random::Key(6));
  Tensor c = Tensor::from_vector<float>({0.5f, -1, 2, 0.25f}, {4});
  Graph g = trace_graph(
      [&](const std::vector<Tensor>& in) {
        Tensor folded = ops::exp(ops::reshape(c * 2.0 + 1.0, {1, 4}));
        return std::vector<Tensor>{in[0] * folded, ops::sum(c)};
      },
      {x});
  ASSERT_EQ(g.num_ops(), 6);
  const Graph before = g;
  EXPECT_TRUE(run_pass(ConstantFolding(), g));
  EXPECT_TRUE(run_pass(DeadCodeElimination(), g));
  EXPECT_EQ(g.num_ops(), 1);  // only the op reading the input is left
  EXPECT_EQ(count_ops(g, OpId::multiply), 1);
  EXPECT_EQ(count_nodes(g, NodeKind::constant), 2);  // exp(...) and sum(c)
  EXPECT_EQ(g.node(g.outputs()[1]).kind, NodeKind::constant);
  expect_same_outputs(before, g, {x});
  EXPECT_FALSE(run_pass(ConstantFolding(), g));
}

TEST(ConstantFolding, NeverGrowsTheProgramPastTheLimit) {
  Tensor x = random::normal({256, 256}, random::Key(7));
  Tensor weights = random::normal({256, 256}, random::Key(8));
  Graph g = trace_graph(
      [&](const std::vector<Tensor>& in) {
        Tensor filled = ops::broadcast_to(Tensor::scalar(1.5), {256, 256});  // 256 KiB from 4 bytes: stays
        Tensor small = ops::broadcast_to(Tensor::scalar(2.5), {64, 64});     // 16 KiB: folds
        Tensor same_size = ops::negative(weights);                           // as big as its input: folds
        return std::vector<Tensor>{in[0] + filled, small, in[0] * same_size};
      },
      {x});
  const Graph before = g;
  EXPECT_TRUE(run_pass(ConstantFolding(), g));
  EXPECT_TRUE(run_pass(DeadCodeElimination(), g));
  EXPECT_EQ(count_ops(g, OpId::broadcast_to), 1);
  EXPECT_EQ(count_ops(g, OpId::negative), 0);
  EXPECT_EQ(g.node(g.outputs()[1]).kind, NodeKind::constant);
  expect_same_outputs(before, g, {x});
}

TEST(ConstantFolding, LeavesOpsOnInputsAndViewsShareTheirBuffer) {
  Tensor x = random::normal({6}, random::Key(9));
  Tensor c = random::normal({2, 3}, random::Key(10));
  Graph g = trace_graph(
      [&](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{ops::exp(in[0]) + ops::reshape(c, {6}), ops::reshape(c, {3, 2})};
      },
      {x});
  const Graph before = g;
  EXPECT_TRUE(run_pass(ConstantFolding(), g));
  EXPECT_EQ(count_ops(g, OpId::exp), 1);
  EXPECT_EQ(count_ops(g, OpId::add), 1);
  EXPECT_EQ(count_ops(g, OpId::reshape), 0);
  const Node& view = g.node(g.outputs()[1]);
  ASSERT_EQ(view.kind, NodeKind::constant);
  EXPECT_EQ(view.constant.raw_data(), c.raw_data());  // a view: no copy at compile time
  expect_same_outputs(before, g, {x});
}

TEST(ConstantFolding, LeavesAKernelErrorForRunTime) {
  Tensor x = Tensor::ones({2, 3});
  Tensor table = random::normal({4, 3}, random::Key(11));
  Tensor bad = Tensor::from_vector<std::int64_t>({1, 7}, {2});  // 7 is out of range
  Graph g = trace_graph(
      [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + ops::gather(table, bad)}; }, {x});
  EXPECT_FALSE(run_pass(ConstantFolding(), g));  // compiling succeeds...
  EXPECT_EQ(count_ops(g, OpId::gather), 1);
  std::string message = testing::error_message<IndexError>([&] { Executor(g).run({x}); });  // ...running fails
  EXPECT_TRUE(testing::contains(message, "[gather]")) << message;
}

}  // namespace
}  // namespace kestrel::jit
