// The default pipeline: its order, and a traced MLP train step (forward, GradientTape backward,
// SGD update) that it shrinks while giving the eager step's results bit for bit.
#include <gtest/gtest.h>

#include <iostream>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/jit/function.h"
#include "framework/jit/passes/pipeline.h"
#include "framework/ops/ops.h"
#include "tests/framework/jit/pass_test_support.h"
#include "tests/support/error_message.h"

namespace kestrel::jit {
namespace {

using pass_testing::count_nodes;
using pass_testing::count_ops;
using pass_testing::expect_bitwise_equal;
using pass_testing::trace_graph;
using testing::contains;
using testing::error_message;

// (x, labels, w1, b1, w2, b2) -> (w1', b1', w2', b2', loss): one SGD step of a 4-16-3 MLP.
std::vector<Tensor> mlp_sgd_step(const std::vector<Tensor>& in) {
  GradientTape tape;
  const std::vector<Tensor> params(in.begin() + 2, in.end());
  for (const Tensor& p : params) tape.watch(p);
  Tensor hidden = ops::relu(ops::matmul(in[0], params[0]) + params[1]);
  Tensor logits = ops::matmul(hidden, params[2]) + params[3];
  Tensor loss = ops::mean(ops::sparse_softmax_cross_entropy(logits, in[1]));
  const std::vector<Tensor> grads = tape.gradient(loss, params);
  std::vector<Tensor> out;
  for (std::size_t i = 0; i < params.size(); ++i) out.push_back(params[i] - grads[i] * 0.1);
  out.push_back(loss);
  return out;
}

std::vector<Tensor> mlp_sgd_step_inputs() {
  return {random::normal({8, 4}, random::Key(1)),
          Tensor::from_vector<std::int64_t>({0, 2, 1, 1, 0, 2, 2, 1}, {8}),
          random::normal({4, 16}, random::Key(2), 0.0, 0.5),
          random::normal({16}, random::Key(3), 0.0, 0.1),
          random::normal({16, 3}, random::Key(4), 0.0, 0.5),
          random::normal({3}, random::Key(5), 0.0, 0.1)};
}

void expect_all_bitwise_equal(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) expect_bitwise_equal(got[i], want[i], "output " + std::to_string(i));
}

TEST(DefaultPipeline, RunsThePassesInTheDesignedOrder) {
  const PassPipeline pipeline = default_pipeline();
  std::vector<std::string> names;
  for (const auto& pass : pipeline.passes()) names.push_back(pass->name());
  EXPECT_EQ(names, (std::vector<std::string>{"dce", "cse", "constant_folding", "algebraic_simplification", "dce",
                                             "cast_folding", "transpose_folding", "dce", "matmul_scale_folding",
                                             "matmul_bias_fusion", "matmul_residual_fusion", "matmul_activation_fusion",
                                             "dce", "elementwise_fusion", "dce"}));
}

TEST(DefaultPipeline, ShrinksAnMlpTrainStepAndKeepsItsResults) {
  const std::vector<Tensor> inputs = mlp_sgd_step_inputs();
  Graph g = trace_graph(mlp_sgd_step, inputs);
  g.verify();
  const Graph traced = g;
  const std::int64_t traced_ops = g.num_ops();

  std::string counts = std::to_string(traced_ops) + " traced";
  const PassPipeline pipeline = default_pipeline();
  for (const auto& pass : pipeline.passes()) {
    pass->run(g);
    g.verify();
    counts += ", " + std::to_string(g.num_ops()) + " after " + pass->name();
  }
  std::cout << "[ mlp step ] ops: " << counts << "; constants " << count_nodes(traced, NodeKind::constant) << " -> "
            << count_nodes(g, NodeKind::constant) << '\n';
  EXPECT_LT(g.num_ops(), traced_ops) << counts;
  // The real work survives: two matmuls forward, and the backward's matmuls for the four gradients.
  EXPECT_EQ(count_ops(g, OpId::matmul), count_ops(traced, OpId::matmul));
  EXPECT_EQ(count_ops(g, OpId::softmax_cross_entropy), 1);
  EXPECT_EQ(g.inputs().size(), inputs.size());

  const std::vector<Tensor> eager = mlp_sgd_step(inputs);
  expect_all_bitwise_equal(Executor(traced).run(inputs), eager);
  expect_all_bitwise_equal(Executor(g).run(inputs), eager);
}

TEST(DefaultPipeline, FunctionCompilesWithIt) {
  const std::vector<Tensor> inputs = mlp_sgd_step_inputs();
  Function step(mlp_sgd_step, "mlp_step", {"x", "labels", "w1", "b1", "w2", "b2"});
  expect_all_bitwise_equal(step(inputs), mlp_sgd_step(inputs));
  std::vector<TensorSpec> specs;
  for (const Tensor& t : inputs) specs.push_back(t.spec());
  const Graph* compiled = step.graph(signature_of(specs, {"x", "labels", "w1", "b1", "w2", "b2"}));
  ASSERT_NE(compiled, nullptr);
  EXPECT_LT(compiled->num_ops(), trace_graph(mlp_sgd_step, inputs).num_ops());
}

TEST(JitVerify, SettingIsOneOrZero) {
  EXPECT_FALSE(parse_jit_verify_setting(nullptr));
  EXPECT_FALSE(parse_jit_verify_setting(""));
  EXPECT_FALSE(parse_jit_verify_setting("0"));
  EXPECT_TRUE(parse_jit_verify_setting("1"));
  const std::string m = error_message<ValueError>([] { parse_jit_verify_setting("yes"); });
  EXPECT_TRUE(contains(m, "KESTREL_JIT_VERIFY='yes'")) << m;
}

// A pass that appends a node whose spec its primitive does not infer: the pipeline stops at
// that pass, and says which.
class MisshapingPass final : public Pass {
 public:
  std::string name() const override { return "misshape"; }
  bool run(Graph& graph) override {
    const Node& exp = graph.node(graph.outputs()[0]);
    graph.add_op(exp.primitive, exp.inputs, {{5}, DType::float32}, "");
    return true;
  }
};

TEST(JitVerify, ABrokenPassIsCaughtWhereItHappens) {
  if (!verify_after_each_pass()) GTEST_SKIP() << "runs with KESTREL_JIT_VERIFY=1, as ctest sets it";
  Graph g = trace_graph([](const std::vector<Tensor>& in) { return std::vector<Tensor>{ops::exp(in[0])}; },
                        std::vector<TensorSpec>{{{4}, DType::float32}});
  PassPipeline pipeline;
  pipeline.add(std::make_unique<MisshapingPass>());
  const std::string m = error_message<JitError>([&] { pipeline.run(g); });
  EXPECT_TRUE(contains(m, "after pass misshape")) << m;
  EXPECT_TRUE(contains(m, "float32[5]")) << m;
}

}  // namespace
}  // namespace kestrel::jit
