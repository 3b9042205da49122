// Elementwise fusion: which ops join a region and which stay, what the fused op reads, and that
// fused graphs compute what the unfused ones do (to 1e-6 relative; bit for bit where the fused
// kernel is exact), up to a traced MLP train step with an Adam update written with ops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iostream>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/random.h"
#include "framework/jit/function.h"
#include "framework/jit/passes/elementwise_fusion.h"
#include "framework/jit/passes/pipeline.h"
#include "framework/ops/ops.h"
#include "tests/framework/jit/pass_test_support.h"

namespace kestrel::jit {
namespace {

using pass_testing::count_nodes;
using pass_testing::count_ops;
using pass_testing::expect_same_outputs;
using pass_testing::run_pass;
using pass_testing::trace_graph;

// The fused ops of a graph, in order.
std::vector<const Node*> fused_nodes(const Graph& g) {
  std::vector<const Node*> out;
  for (const Node& n : g.nodes()) {
    if (n.kind == NodeKind::op && n.primitive->id() == OpId::fused_elementwise) out.push_back(&n);
  }
  return out;
}

void expect_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].spec(), want[i].spec()) << "output " << i;
    const std::vector<double> a = got[i].to_vector<double>(), b = want[i].to_vector<double>();
    for (std::size_t k = 0; k < a.size(); ++k) {
      const double tolerance = 1e-6 * std::max(std::fabs(a[k]), std::fabs(b[k])) + 1e-12;
      ASSERT_LE(std::fabs(a[k] - b[k]), tolerance) << "output " << i << " element " << k;
    }
  }
}

void expect_close(const Graph& before, const Graph& after, const std::vector<Tensor>& inputs) {
  expect_close(Executor(after).run(inputs), Executor(before).run(inputs));
}

TEST(ElementwiseFusion, AChainOfFiveOpsBecomesOneKernel) {
  Tensor x = random::normal({37, 50}, random::Key(1)), y = random::normal({37, 50}, random::Key(2));
  Graph g = trace_graph(
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{ops::tanh(ops::exp(in[0]) * in[1] - in[0]) / in[1]};
      },
      {x, y});
  ASSERT_EQ(g.num_ops(), 5);
  const Graph before = g;
  EXPECT_TRUE(run_pass(ElementwiseFusion(), g));
  EXPECT_EQ(g.num_ops(), 1);
  ASSERT_EQ(fused_nodes(g).size(), 1u);
  const Node& fused = *fused_nodes(g)[0];
  EXPECT_EQ(fused.inputs.size(), 2u);  // x and y, each once
  EXPECT_EQ(fused.spec, before.node(before.outputs()[0]).spec);
  expect_close(before, g, {x, y});
  EXPECT_FALSE(run_pass(ElementwiseFusion(), g));  // one op is left: nothing more to fuse
}

TEST(ElementwiseFusion, FanOutStopsFusionAtTheSharedValue) {
  Tensor x = random::normal({300}, random::Key(3));
  Graph g = trace_graph(
      [](const std::vector<Tensor>& in) {
        Tensor shared = ops::exp(in[0]) + 1.0;  // read by both chains below: computed once, kept
        Tensor a = ops::tanh(shared) * 3.0;
        Tensor b = ops::sqrt(shared) - in[0];
        return std::vector<Tensor>{a, b, ops::relu(b)};  // b is an output too: its chain ends there
      },
      {x});
  ASSERT_EQ(g.num_ops(), 7);
  const Graph before = g;
  EXPECT_TRUE(run_pass(ElementwiseFusion(), g));
  // {exp, add}, {tanh, multiply}, {sqrt, subtract}; relu alone stays relu.
  EXPECT_EQ(g.num_ops(), 4);
  ASSERT_EQ(fused_nodes(g).size(), 3u);
  EXPECT_EQ(count_ops(g, OpId::relu), 1);
  // The first fused op makes the shared value from x alone; the other two read it.
  const Node* first = fused_nodes(g)[0];
  EXPECT_EQ(first->inputs, std::vector<ValueId>{g.inputs()[0]});
  const ValueId shared = first - g.nodes().data();
  for (const Node* n : {fused_nodes(g)[1], fused_nodes(g)[2]}) {
    EXPECT_NE(std::find(n->inputs.begin(), n->inputs.end(), shared), n->inputs.end()) << g.to_string();
  }
  expect_close(before, g, {x});
}

TEST(ElementwiseFusion, ACheapSharedProducerIsRecomputedInEachRegion) {
  // s = x * 0.5 is read by two regions: written once and read back twice it moves three tensors
  // of bytes; computed in each, the two regions read x instead.
  const std::vector<Tensor> inputs{random::normal({300}, random::Key(5)), random::normal({300}, random::Key(6))};
  const Graph before = trace_graph(
      [](const std::vector<Tensor>& in) {
        const Tensor s = in[0] * 0.5;
        return std::vector<Tensor>{ops::square(s + in[1]), ops::relu(s) - 1.0};
      },
      inputs);
  Graph g = before;
  EXPECT_TRUE(run_pass(ElementwiseFusion(), g));
  ASSERT_EQ(fused_nodes(g).size(), 2u) << g.to_string();
  EXPECT_EQ(g.num_ops(), 2) << g.to_string();
  for (const Node* region : fused_nodes(g)) EXPECT_EQ(region->inputs.front(), g.inputs()[0]) << g.to_string();
  expect_same_outputs(before, g, inputs);

  // A reader left alone by the regions becomes one with the producer: exp(s) beside s + y.
  Graph lone = trace_graph(
      [](const std::vector<Tensor>& in) {
        const Tensor s = in[0] * 0.5;
        return std::vector<Tensor>{ops::exp(s), s + in[1]};
      },
      inputs);
  const Graph lone_before = lone;
  EXPECT_TRUE(run_pass(ElementwiseFusion(), lone));
  EXPECT_EQ(fused_nodes(lone).size(), 2u) << lone.to_string();
  EXPECT_EQ(count_ops(lone, OpId::multiply), 0) << lone.to_string();
  expect_same_outputs(lone_before, lone, inputs);
}

TEST(ElementwiseFusion, SharedProducersThatCostMoreToRecomputeStay) {
  const std::vector<Tensor> inputs{random::normal({300}, random::Key(5)), random::normal({300}, random::Key(6)),
                                   random::normal({300, 300}, random::Key(7))};
  // Each shared value below is read by two regions ({add, square} and {relu, subtract}).
  const auto shared_by_two = [&](const std::function<Tensor(const std::vector<Tensor>&)>& make) {
    return trace_graph(
        [&](const std::vector<Tensor>& in) {
          const Tensor s = make(in);
          return std::vector<Tensor>{ops::square(s + in[1]), ops::relu(s) - 1.0};
        },
        inputs);
  };
  // Two operands of its own size: each region would read two tensors instead of one.
  Graph two_operands = shared_by_two([](const std::vector<Tensor>& in) { return in[0] * in[1]; });
  // A transcendental function: recomputing costs more than the memory it saves.
  Graph transcendental = shared_by_two([](const std::vector<Tensor>& in) { return ops::exp(in[0]); });
  for (Graph* g : {&two_operands, &transcendental}) {
    EXPECT_TRUE(run_pass(ElementwiseFusion(), *g));
    EXPECT_EQ(count_ops(*g, OpId::multiply) + count_ops(*g, OpId::exp), 1) << g->to_string();  // s, kept
  }
  // Read by a matmul too, or an output itself: it is materialized anyway.
  Graph matmul = trace_graph(
      [](const std::vector<Tensor>& in) {
        const Tensor s = in[0] * 0.5;
        return std::vector<Tensor>{ops::square(s + in[1]), ops::relu(s) - 1.0,
                                   ops::matmul(ops::reshape(s, {1, 300}), in[2])};
      },
      inputs);
  Graph output = trace_graph(
      [](const std::vector<Tensor>& in) {
        const Tensor s = in[0] * 0.5;
        return std::vector<Tensor>{ops::square(s + in[1]), ops::relu(s) - 1.0, s};
      },
      inputs);
  for (Graph* g : {&matmul, &output}) {
    EXPECT_TRUE(run_pass(ElementwiseFusion(), *g));
    EXPECT_EQ(count_ops(*g, OpId::multiply), 1) << g->to_string();
  }
}

TEST(ElementwiseFusion, ScalarConstantsBecomeProgramConstants) {
  Tensor x = random::normal({4, 5}, random::Key(4));
  Graph g = trace_graph([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * 0.5 + 3.0}; }, {x});
  ASSERT_EQ(count_nodes(g, NodeKind::constant), 2);
  const Graph before = g;
  default_pipeline().run(g);
  g.verify();
  EXPECT_EQ(g.num_ops(), 1);
  EXPECT_EQ(count_nodes(g, NodeKind::constant), 0);  // inside the program now; the DCE after fusion dropped them
  ASSERT_EQ(fused_nodes(g).size(), 1u);
  EXPECT_EQ(fused_nodes(g)[0]->inputs, std::vector<ValueId>{g.inputs()[0]});
  // A dump shows the formula.
  EXPECT_NE(g.to_string().find("%1 = fused_elementwise(%0) {((in0 * 0.5) + 3)} : float32[4,5]"), std::string::npos)
      << g.to_string();
  expect_same_outputs(before, g, {x});
}

TEST(ElementwiseFusion, BiasAndActivationAfterMatmulFuseIntoOneOp) {
  Tensor x = random::normal({16, 24}, random::Key(5)), w = random::normal({24, 40}, random::Key(6), 0.0, 0.2);
  Tensor bias = random::normal({40}, random::Key(7), 0.0, 0.1);
  auto dense = [&](const std::vector<Tensor>& in, auto activation) {
    LayerScope layer("dense", "Dense");
    return std::vector<Tensor>{activation(ops::matmul(in[0], w) + bias)};
  };
  const std::vector<std::function<Tensor(const Tensor&)>> activations = {
      ops::relu, ops::tanh, [](const Tensor& t) { return ops::gelu(t); },
      [](const Tensor& t) { return ops::gelu(t, {.approximate = true}); }};
  for (std::size_t i = 0; i < activations.size(); ++i) {
    Graph g = trace_graph([&](const std::vector<Tensor>& in) { return dense(in, activations[i]); }, {x});
    const Graph before = g;
    EXPECT_TRUE(run_pass(ElementwiseFusion(), g)) << i;
    EXPECT_EQ(g.num_ops(), 2) << g.to_string();
    EXPECT_EQ(count_ops(g, OpId::matmul), 1);
    ASSERT_EQ(fused_nodes(g).size(), 1u);
    const Node& fused = *fused_nodes(g)[0];
    EXPECT_EQ(fused.name, "dense");  // the layer path of the region's root
    ASSERT_EQ(fused.inputs.size(), 2u);
    EXPECT_EQ(g.node(fused.inputs[1]).spec.shape, Shape({40}));  // the bias, read as a suffix
    if (i == 0) {
      expect_same_outputs(before, g, {x});  // add and relu are exact
    } else {
      expect_close(before, g, {x});
    }
  }
}

TEST(ElementwiseFusion, SuffixAndScalarOperandsAreReadWithoutBroadcasting) {
  Tensor x = random::normal({6, 70, 9}, random::Key(14)), plane = random::normal({70, 9}, random::Key(15));
  Tensor s = Tensor::scalar(0.3);
  Graph g = trace_graph(
      [](const std::vector<Tensor>& in) {
        // [L, N] against [B, L, N]; a materialized broadcast of a scalar chain; a rank-0 result.
        Tensor t = ops::tanh(in[0] * in[1]);
        Tensor y = t - ops::broadcast_to(ops::exp(in[2]), {6, 70, 9});
        return std::vector<Tensor>{y, ops::broadcast_to(ops::sqrt(in[2]), {4, 3}), ops::sqrt(in[2] + 1.0) * 2.0};
      },
      {x, plane, s});
  const Graph before = g;
  EXPECT_TRUE(run_pass(ElementwiseFusion(), g));
  EXPECT_EQ(g.num_ops(), 3) << g.to_string();
  ASSERT_EQ(fused_nodes(g).size(), 3u);
  EXPECT_EQ(count_ops(g, OpId::broadcast_to), 0);
  EXPECT_EQ(fused_nodes(g)[0]->inputs, (std::vector<ValueId>{g.inputs()[0], g.inputs()[1], g.inputs()[2]}));
  EXPECT_EQ(fused_nodes(g)[1]->spec.shape, Shape({4, 3}));  // no input has it: the op carries it
  EXPECT_EQ(fused_nodes(g)[2]->spec.shape, Shape{});
  expect_close(before, g, {x, plane, s});
}

TEST(ElementwiseFusion, RowStatisticsFuseWithTheRowsTheyScale) {
  // Layer norm written with ops: the keepdims statistics [B, T, 1] are read by the fused kernel
  // one value per row, so centring, scaling, gamma and beta become one pass.
  Tensor x = random::normal({8, 4, 32}, random::Key(21)), gamma = random::normal({32}, random::Key(22));
  Tensor beta = random::normal({32}, random::Key(23));
  Graph g = trace_graph(
      [](const std::vector<Tensor>& in) {
        const ops::ReduceOptions rows{.axes = {-1}, .keepdims = true};
        Tensor centered = in[0] - ops::mean(in[0], rows);
        Tensor rstd = ops::rsqrt(ops::mean(ops::square(centered), rows) + 1e-5);
        return std::vector<Tensor>{centered * rstd * in[1] + in[2]};
      },
      {x, gamma, beta});
  const Graph before = g;
  EXPECT_TRUE(run_pass(ElementwiseFusion(), g));
  // Centring, scaling, gamma and beta are one kernel reading x, and the [8, 4, 1] mean and rstd in
  // place. The centred x has two readers, the square's region and this one: each computes it
  // again from x rather than one writing it for both to read back.
  const Node& scale = *fused_nodes(g).back();
  EXPECT_EQ(scale.spec.shape, Shape({8, 4, 32})) << g.to_string();
  ASSERT_EQ(scale.inputs.size(), 5u) << g.to_string();
  EXPECT_EQ(scale.inputs[0], 0) << g.to_string();  // x itself
  EXPECT_EQ(g.node(scale.inputs[1]).spec.shape, Shape({8, 4, 1}));
  EXPECT_EQ(g.node(scale.inputs[2]).spec.shape, Shape({8, 4, 1}));
  EXPECT_EQ(count_ops(g, OpId::broadcast_to), 0);
  EXPECT_EQ(count_ops(g, OpId::subtract), 0) << g.to_string();
  EXPECT_EQ(g.num_ops(), 6) << g.to_string();  // 2 sums, the mean's scale, the square, rstd, the output
  expect_close(before, g, {x, gamma, beta});
}

TEST(ElementwiseFusion, ComparisonsAndWhereFuseWithTheirBoolInside) {
  Tensor x = random::normal({64, 9}, random::Key(8)), g_in = random::normal({64, 9}, random::Key(9));
  // relu's gradient: where(x > 0, g, 0); and not_equal and casts to and from bool.
  Graph g = trace_graph(
      [](const std::vector<Tensor>& in) {
        Tensor back =
            ops::where(ops::greater(in[0], ops::scalar_like(in[0], 0.0)), in[1], ops::scalar_like(in[1], 0.0));
        Tensor flags = ops::cast(ops::not_equal(in[0], in[1]), DType::float32);
        Tensor nonzero = ops::cast(ops::cast(back, DType::bool_), DType::float32);
        return std::vector<Tensor>{back * 2.0 + flags - nonzero};
      },
      {x, g_in});
  const Graph before = g;
  EXPECT_TRUE(run_pass(ElementwiseFusion(), g));
  EXPECT_EQ(g.num_ops(), 1) << g.to_string();
  expect_same_outputs(before, g, {x, g_in});
}

TEST(ElementwiseFusion, StopsWhereTheKernelCannotReadAnInput) {
  Tensor x = random::normal({8, 6}, random::Key(10)),
         mask = ops::greater(random::normal({8, 6}, random::Key(11)), Tensor::scalar(0.0));
  Tensor column = random::normal({8, 1}, random::Key(12));
  Graph g = trace_graph(
      [](const std::vector<Tensor>& in) {
        // A bool from outside (an input mask): where stays, its operands' chain fuses.
        Tensor picked = ops::where(in[1], ops::exp(in[0]) * 2.0, in[0]);
        // A column [8, 1] is a broadcast but not a suffix: that add stays, and relu after it alone.
        Tensor shifted = ops::relu(in[0] + in[2]);
        return std::vector<Tensor>{picked + 1.0, shifted};
      },
      {x, mask, column});
  const Graph before = g;
  EXPECT_TRUE(run_pass(ElementwiseFusion(), g));
  EXPECT_EQ(fused_nodes(g).size(), 1u) << g.to_string();
  EXPECT_EQ(count_ops(g, OpId::where), 1);
  EXPECT_EQ(count_ops(g, OpId::add), 2);  // the column add, and picked + 1 after the unfused where
  EXPECT_EQ(count_ops(g, OpId::relu), 1);
  expect_same_outputs(before, g, {x, mask, column});
}

TEST(ElementwiseFusion, FusesBfloat16ChainsAndCastsRoundingEachValueAsItsOpWould) {
  Tensor x = random::normal({8, 600}, random::Key(10));
  Tensor narrow = ops::cast(random::normal({8, 600}, random::Key(11)), DType::bfloat16);
  Tensor bias = ops::cast(random::normal({600}, random::Key(12)), DType::bfloat16);
  Graph g = trace_graph(
      [](const std::vector<Tensor>& in) {
        // mixed_bfloat16's shape: a float32 value cast down, bfloat16 ops (each rounding its
        // result), a bfloat16 bias longer than a block, and the result cast back up.
        Tensor h = ops::tanh(ops::cast(in[0], DType::bfloat16)) * 2.0 + in[1];
        Tensor up = ops::cast(ops::gelu(h + in[2]), DType::float32);
        // And a region whose result stays bfloat16.
        Tensor down = ops::relu(in[1] * in[2]) - 1.0;
        return std::vector<Tensor>{up, down};
      },
      {x, narrow, bias});
  const Graph before = g;
  EXPECT_TRUE(run_pass(ElementwiseFusion(), g));
  ASSERT_EQ(fused_nodes(g).size(), 2u) << g.to_string();
  EXPECT_EQ(g.num_ops(), 2) << g.to_string();
  EXPECT_EQ(g.node(g.outputs()[0]).spec.dtype, DType::float32);
  EXPECT_EQ(g.node(g.outputs()[1]).spec.dtype, DType::bfloat16);
  const std::string text = g.to_string();
  EXPECT_NE(text.find("round_bfloat16(in0)"), std::string::npos) << "the cast to bfloat16 rounds: " << text;
  expect_same_outputs(before, g, {x, narrow, bias});
}

TEST(ElementwiseFusion, InlinesFusedOpsAndComputesScalarsOnce) {
  Tensor x = random::normal({130}, random::Key(13)), step = Tensor::scalar(3.0);
  ElementwiseBuilder b;
  ElementwiseProgram momentum = b.build(b.input(0) * 0.9 + b.input(1));
  Graph g = trace_graph(
      [&](const std::vector<Tensor>& in) {
        // A learning rate from the step (rank-0 ops) and an existing fused op: one program for all.
        Tensor lr = ops::sqrt(1.0 - in[1] * 0.01) / (in[1] + 1.0);
        return std::vector<Tensor>{ops::fused_elementwise(momentum, {in[0], lr}) - lr * in[0]};
      },
      {x, step});
  const Graph before = g;
  EXPECT_TRUE(run_pass(ElementwiseFusion(), g));
  EXPECT_EQ(g.num_ops(), 1) << g.to_string();
  expect_close(before, g, {x, step});
}

// (x, labels, lr, w1, b1, w2, b2, w3, b3, m..., v...) -> (params', m', v'..., loss): one Adam step.
std::vector<Tensor> mlp_adam_step(const std::vector<Tensor>& in) {
  constexpr std::size_t kParams = 6;
  const std::vector<Tensor> params(in.begin() + 3, in.begin() + 3 + kParams);
  GradientTape tape;
  for (const Tensor& p : params) tape.watch(p);
  Tensor h = ops::relu(ops::matmul(in[0], params[0]) + params[1]);
  h = ops::relu(ops::matmul(h, params[2]) + params[3]);
  Tensor logits = ops::matmul(h, params[4]) + params[5];
  Tensor loss = ops::mean(ops::sparse_softmax_cross_entropy(logits, in[1]));
  const std::vector<Tensor> grads = tape.gradient(loss, params);
  std::vector<Tensor> out;
  for (std::size_t i = 0; i < kParams; ++i) {
    const Tensor& m = in[3 + kParams + i];
    const Tensor& v = in[3 + 2 * kParams + i];
    Tensor m_next = m * 0.9 + grads[i] * (1.0 - 0.9);
    Tensor v_next = v * 0.999 + ops::square(grads[i]) * (1.0 - 0.999);
    out.push_back(params[i] - in[2] * m_next / (ops::sqrt(v_next) + 1e-7));
    out.push_back(m_next);
    out.push_back(v_next);
  }
  out.push_back(loss);
  return out;
}

std::vector<Tensor> mlp_adam_inputs() {
  const std::vector<Shape> shapes = {{20, 32}, {32}, {32, 16}, {16}, {16, 5}, {5}};
  std::vector<Tensor> in = {random::normal({8, 20}, random::Key(20)),
                            Tensor::from_vector<std::int64_t>({0, 4, 1, 3, 2, 2, 4, 0}, {8}), Tensor::scalar(1e-3)};
  for (std::size_t i = 0; i < shapes.size(); ++i) {  // parameters
    in.push_back(random::normal(shapes[i], random::Key(21 + i), 0, 0.3));
  }
  for (std::size_t i = 0; i < shapes.size(); ++i) {  // first moments
    in.push_back(random::normal(shapes[i], random::Key(31 + i), 0, 0.01));
  }
  for (std::size_t i = 0; i < shapes.size(); ++i) {  // second moments
    in.push_back(random::uniform(shapes[i], random::Key(41 + i), 0, 1e-4));
  }
  return in;
}

TEST(ElementwiseFusion, AnMlpAdamStepRunsFarFewerKernelsWithTheSameResults) {
  const std::vector<Tensor> inputs = mlp_adam_inputs();
  Graph g = trace_graph(mlp_adam_step, inputs);
  const std::int64_t traced = g.num_ops();
  PassPipeline simplify;
  add_simplification_passes(simplify);
  simplify.run(g);
  const std::int64_t simplified = g.num_ops();
  default_pipeline().run(g);
  g.verify();
  std::cout << "[ mlp adam step ] ops: " << traced << " traced, " << simplified << " simplified, " << g.num_ops()
            << " fused (" << fused_nodes(g).size() << " fused_elementwise)\n";
  EXPECT_LT(g.num_ops() * 2, simplified);
  EXPECT_EQ(count_ops(g, OpId::matmul), 8);  // 3 forward, 5 backward (no gradient for the input)
  // Adam's three updates per parameter: the moments are outputs, so each stays its own kernel.
  EXPECT_GE(fused_nodes(g).size(), 18u);
  expect_close(Executor(g).run(inputs), mlp_adam_step(inputs));

  Function step(mlp_adam_step, "mlp_adam_step");
  expect_close(step(inputs), mlp_adam_step(inputs));
}

}  // namespace
}  // namespace kestrel::jit
