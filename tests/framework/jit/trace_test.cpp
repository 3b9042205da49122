#include <gtest/gtest.h>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/jit/executor.h"
#include "framework/jit/trace.h"
#include "framework/layers/dense.h"
#include "framework/ops/data_dependent.h"
#include "framework/ops/ops.h"
#include "tests/framework/jit/pass_test_support.h"
#include "tests/support/error_message.h"

namespace kestrel::jit {
namespace {

using pass_testing::trace_graph;

using testing::contains;
using testing::error_message;

void expect_close(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.spec(), b.spec());
  std::vector<float> x = a.to_vector<float>();
  std::vector<float> y = b.to_vector<float>();
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_FLOAT_EQ(x[i], y[i]) << "element " << i;
}

TEST(Trace, RecordsOpsInsteadOfRunningThem) {
  Tensor w = random::normal({4, 3}, random::Key(1));
  auto fn = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{ops::relu(ops::matmul(in[0], w))}; };
  Tensor x = random::normal({2, 4}, random::Key(2));
  Graph g = trace_graph(fn, {x});
  g.verify();
  EXPECT_EQ(g.num_ops(), 2);
  EXPECT_EQ(g.inputs().size(), 1u);
  const std::string text = g.to_string();
  EXPECT_TRUE(contains(text, "%0 = input 'in0' : float32[2,4]")) << text;
  EXPECT_TRUE(contains(text, "%1 = constant : float32[4,3]")) << text;  // w, captured
  EXPECT_TRUE(contains(text, "matmul(%0, %1)")) << text;
  EXPECT_TRUE(contains(text, "relu(%2) : float32[2,3]")) << text;

  Executor exec(std::move(g));
  expect_close(exec.run({x})[0], fn({x})[0]);
}

// Eager, a float32 matmul applies its activation in the GEMM; traced, the activation is its own op,
// and the jit's fusion decides with the whole program in view (a training step keeps GELU's input).
TEST(Trace, AMatmulsActivationIsRecordedAsItsOwnOp) {
  const Tensor w = random::normal({4, 3}, random::Key(1));
  const Graph g = trace_graph(
      [&](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{ops::matmul(in[0], w, {.activation = ops::MatmulActivation::gelu})};
      },
      {random::normal({2, 4}, random::Key(2))});
  EXPECT_EQ(g.num_ops(), 2);
  const std::string text = g.to_string();
  EXPECT_TRUE(contains(text, "gelu(%2) {approximate=false} : float32[2,3]")) << text;
  EXPECT_FALSE(contains(text, "activation=")) << text;
}

TEST(Trace, GradientsTracedThroughATapeMatchEager) {
  Tensor w = random::normal({4, 3}, random::Key(3));
  Tensor x = random::normal({5, 4}, random::Key(4));
  auto loss_and_grad = [](const std::vector<Tensor>& in) {
    GradientTape tape;
    tape.watch(in[1]);
    Tensor loss = ops::mean(ops::square(ops::tanh(ops::matmul(in[0], in[1]))));
    return std::vector<Tensor>{loss, tape.gradient(loss, {in[1]})[0]};
  };
  Executor exec(trace_graph(loss_and_grad, {x, w}));
  std::vector<Tensor> jit = exec.run({x, w});
  std::vector<Tensor> eager = loss_and_grad({x, w});
  expect_close(jit[0], eager[0]);
  expect_close(jit[1], eager[1]);
}

TEST(Trace, LayersNameTheirOps) {
  layers::Dense dense(3);
  Tensor x = random::normal({2, 4}, random::Key(5));
  dense(x);  // build outside the trace
  Graph g = trace_graph([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{dense(in[0])}; }, {x});
  EXPECT_TRUE(contains(g.to_string(), "# dense")) << g.to_string();
}

TEST(Trace, ReadingATracedValueIsRuleOne) {
  layers::Dense dense(1);
  Tensor x = random::normal({2, 4}, random::Key(6));
  dense(x);
  std::string message = error_message<JitError>([&] {
    trace_graph(
        [&](const std::vector<Tensor>& in) {
          Tensor y = dense(in[0]);
          if (ops::sum(y).item() > 0) return std::vector<Tensor>{y};  // a data-dependent branch
          return std::vector<Tensor>{ops::negative(y)};
        },
        {x});
  });
  EXPECT_TRUE(contains(message, "rule 1")) << message;
  EXPECT_TRUE(contains(message, "item()")) << message;
  EXPECT_TRUE(contains(message, "op 'sum'")) << message;
  EXPECT_TRUE(contains(message, "ops::where")) << message;

  std::string in_layer = error_message<JitError>([&] {
    trace_graph(
        [&](const std::vector<Tensor>& in) {
          dense(in[0]).to_vector<float>();
          return std::vector<Tensor>{};
        },
        {x});
  });
  EXPECT_TRUE(contains(in_layer, "in layer 'dense")) << in_layer;
}

TEST(Trace, TracesDoNotNestOrLeak) {
  Trace outer;
  TraceScope active(outer);
  Trace inner;
  EXPECT_TRUE(contains(error_message<JitError>([&] { TraceScope again(inner); }), "already running"));
  Tensor from_inner = inner.input({{2}, DType::float32}, "leak");
  std::string message = error_message<JitError>([&] { outer.value_of(from_inner); });
  EXPECT_TRUE(contains(message, "another trace")) << message;
}

TEST(Executor, ChecksInputSpecs) {
  Tensor x = Tensor::zeros({2, 4});
  Executor exec(trace_graph([](const std::vector<Tensor>& in) { return std::vector<Tensor>{ops::exp(in[0])}; }, {x}));
  std::string message = error_message<ShapeError>([&] { exec.run({Tensor::zeros({3, 4})}); });
  EXPECT_TRUE(contains(message, "input 'in0' is float32[3,4]")) << message;
  EXPECT_TRUE(contains(message, "compiled for float32[2,4]")) << message;
}

}  // namespace
}  // namespace kestrel::jit

namespace kestrel::jit {
namespace {

using pass_testing::trace_graph;

TEST(Trace, DataDependentShapesAreRuleTwo) {
  Tensor losses = Tensor::from_vector<float>({1, 2, 3, 4}, {4});
  Tensor labels = Tensor::from_vector<std::int64_t>({5, -100, 7, -100}, {4});
  // Eager: the kept rows.
  Tensor kept = ops::boolean_mask(losses, ops::not_equal(labels, Tensor::scalar(-100, DType::int64)));
  EXPECT_EQ(kept.to_vector<float>(), (std::vector<float>{1, 3}));
  EXPECT_EQ(ops::unique(Tensor::from_vector<std::int64_t>({3, 1, 3, 2, 1}, {5})).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{3, 1, 2}));
  EXPECT_EQ(ops::nonzero(Tensor::from_vector<float>({0, 5, 0, 7}, {2, 2})).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{0, 1, 1, 1}));
  // Traced: JitError naming rule 2 and the mask fix.
  std::string message = testing::error_message<JitError>([&] {
    trace_graph(
        [](const std::vector<Tensor>& in) {
          return std::vector<Tensor>{
              ops::boolean_mask(in[0], ops::not_equal(in[1], Tensor::scalar(-100, DType::int64)))};
        },
        {losses, labels});
  });
  EXPECT_TRUE(testing::contains(message, "rule 2")) << message;
  EXPECT_TRUE(testing::contains(message, "ops::boolean_mask")) << message;
  EXPECT_TRUE(testing::contains(message, "sum(losses * mask) / sum(mask)")) << message;
  for (auto op : {ops::unique, ops::nonzero}) {
    std::string m = testing::error_message<JitError>(
        [&] { trace_graph([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{op(in[0])}; }, {labels}); });
    EXPECT_TRUE(testing::contains(m, "rule 2")) << m;
  }
}

}  // namespace
}  // namespace kestrel::jit
