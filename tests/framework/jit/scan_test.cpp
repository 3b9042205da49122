// ops::scan, the loop op: how it runs eagerly and compiled, its layout, nesting, second order, the
// instances replicas run side by side, and the errors that name the layer when a step breaks a rule.
// Its values and gradients against references are in the op table (tests/framework/ops/scan_cases.cpp).
#include "framework/jit/scan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <thread>

#include "framework/autodiff/gradcheck.h"
#include "framework/autodiff/gradient_tape.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/jit/executor.h"
#include "framework/jit/function.h"
#include "framework/jit/loop_body.h"
#include "framework/jit/trace.h"
#include "framework/layers/layer.h"
#include "framework/ops/collective.h"
#include "framework/ops/ops.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

void expect_near(const Tensor& got, const Tensor& want, const std::string& what, double tolerance = 1e-5) {
  ASSERT_EQ(got.spec(), want.spec()) << what;
  const std::vector<double> a = values(got), b = values(want);
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_NEAR(a[i], b[i], tolerance * (1 + std::fabs(b[i]))) << what << " element " << i;
  }
}

// A running sum from the initial carry; each step outputs carry * x.
ops::ScanStep sum_step(const std::vector<Tensor>& carry, const std::vector<Tensor>& x, const std::vector<Tensor>&) {
  return {.carry = {ops::add(carry[0], x[0])}, .ys = {ops::multiply(carry[0], x[0])}};
}

// A layer that runs the loop it is given, so errors have a layer to name.
class Looper : public Layer {
 public:
  Looper(std::string name, std::function<Tensor(const Tensor&)> loop)
      : Layer("Looper", std::move(name)), loop_(std::move(loop)) {}
  Tensor call(const Tensor& x, bool) override { return loop_(x); }

 private:
  std::function<Tensor(const Tensor&)> loop_;
};

TEST(Scan, EagerlyTheStepIsTracedOnceThenCalledPerStep) {
  int calls = 0;
  const ops::ScanFunction step = [&](const auto& carry, const auto& x, const auto& consts) {
    ++calls;
    return sum_step(carry, x, consts);
  };
  const Tensor xs = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {5, 2});
  const ops::ScanResult r = ops::scan(step, {.carry = {Tensor::from_vector<float>({1, 1}, {2})}, .xs = {xs}});
  EXPECT_EQ(calls, 6);  // once traced (checking the rules, finding the outputs' shapes), once per step
  EXPECT_EQ(values(r.carry[0]), (std::vector<double>{26, 31}));
  EXPECT_EQ(values(r.ys[0]), (std::vector<double>{1, 2, 6, 12, 25, 42, 70, 104, 153, 210}));
  EXPECT_EQ(values(r.stacked_carry(0)), (std::vector<double>{2, 3, 5, 7, 10, 13, 17, 21, 26, 31}));
}

TEST(Scan, CompiledTheStepIsTracedOnceIntoOneLoopOp) {
  int calls = 0;
  const ops::ScanFunction step = [&](const auto& carry, const auto& x, const auto& consts) {
    ++calls;
    return sum_step(carry, x, consts);
  };
  const Tensor xs = random::normal({6, 3}, random::Key(1));
  const Tensor h0 = random::normal({3}, random::Key(2));
  auto run = [&](const std::vector<Tensor>& in) {
    const ops::ScanResult r = ops::scan(step, {.carry = {in[1]}, .xs = {in[0]}});
    return std::vector<Tensor>{r.carry[0], r.ys[0]};
  };
  const std::vector<Tensor> eager = run({xs, h0});
  calls = 0;
  jit::Function compiled(run, "running_sum");
  const std::vector<Tensor> first = compiled({xs, h0});
  EXPECT_EQ(calls, 1);
  const std::vector<Tensor> second = compiled({xs, h0});
  EXPECT_EQ(calls, 1);  // the compiled program runs the traced body
  for (std::size_t i = 0; i < eager.size(); ++i) {
    expect_near(first[i], eager[i], "first run " + std::to_string(i));
    expect_near(second[i], eager[i], "second run " + std::to_string(i));
  }
  const jit::Graph* graph = compiled.graph(jit::signature_of({xs.spec(), h0.spec()}, {}));
  ASSERT_NE(graph, nullptr);
  const std::string text = graph->to_string();
  EXPECT_EQ(testing::count_of(text, "scan("), 1u) << text;
  EXPECT_TRUE(contains(text, "length=6, reverse=false, body=a program of 2 ops")) << text;
}

TEST(Scan, ReverseRunsFromTheLastSliceAndKeepsOutputsAligned) {
  const Tensor xs = Tensor::from_vector<float>({1, 2, 3, 4}, {4});
  const ops::ScanResult r = ops::scan(
      [](const auto& carry, const auto& x, const auto&) {
        const Tensor next = ops::add(carry[0], x[0]);
        return ops::ScanStep{.carry = {next}, .ys = {next}};
      },
      {.carry = {Tensor::scalar(0.0)}, .xs = {xs}}, {.reverse = true});
  EXPECT_EQ(values(r.carry[0]), (std::vector<double>{10}));
  EXPECT_EQ(values(r.ys[0]), (std::vector<double>{10, 9, 7, 4}));  // row t: the step that read xs[t]
}

TEST(Scan, ALengthWithoutSequencesAndConstsInEveryStep) {
  // x_{n+1} = x_n * a + b, four times.
  const ops::ScanResult r = ops::scan(
      [](const auto& carry, const auto&, const auto& consts) {
        return ops::ScanStep{.carry = {ops::add(ops::multiply(carry[0], consts[0]), consts[1])}};
      },
      {.carry = {Tensor::scalar(1.0)}, .consts = {Tensor::scalar(2.0), Tensor::scalar(1.0)}}, {.length = 4});
  EXPECT_EQ(values(r.carry[0]), (std::vector<double>{31}));
}

TEST(Scan, SummedCarriesKeepOnlyTheirFinalValue) {
  jit::Trace trace;
  const jit::TraceScope active(trace);
  const Tensor xs = trace.input({{10, 4}, DType::float32}, "xs");
  auto step = [](const std::vector<Tensor>& carry, const std::vector<Tensor>& x, const std::vector<Tensor>&) {
    return ops::ScanStep{.carry = {ops::tanh(x[0]), ops::add(carry[1], ops::square(x[0]))}};
  };
  const Tensor zeros = Tensor::zeros({4});
  const ops::ScanResult kept = ops::scan(step, {.carry = {zeros, zeros}, .xs = {xs}});
  const ops::ScanResult summed = ops::scan(step, {.carry = {zeros, zeros}, .xs = {xs}}, {.summed_carries = {1}});
  const jit::Graph graph = trace.finish({kept.carry[1], summed.carry[1]});
  std::vector<Shape> packed;
  for (const jit::Node& node : graph.nodes()) {
    if (node.kind == jit::NodeKind::op && node.primitive->id() == OpId::scan) packed.push_back(node.spec.shape);
  }
  EXPECT_EQ(packed, (std::vector<Shape>{{10 * 8}, {10 * 4 + 4}}));
  EXPECT_TRUE(contains(error_message<ValueError>([&] { summed.stacked_carry(1); }), "a summed carry"));
}

TEST(Scan, NestedLoopsCompileAndDifferentiate) {
  // Outer loop over xs [3, 4, 2]; each step runs an inner loop over its 4 rows.
  auto run = [](const std::vector<Tensor>& in) {
    const ops::ScanResult outer = ops::scan(
        [](const auto& carry, const auto& x, const auto& consts) {
          const ops::ScanResult inner = ops::scan(
              [](const auto& c, const auto& row, const auto& k) {
                return ops::ScanStep{.carry = {ops::tanh(ops::add(c[0], ops::multiply(row[0], k[0])))}};
              },
              {.carry = {carry[0]}, .xs = {x[0]}, .consts = {consts[0]}});
          const Tensor h = ops::tanh(ops::add(inner.carry[0], carry[0]));
          return ops::ScanStep{.carry = {h}, .ys = {h}};
        },
        {.carry = {Tensor::zeros({2})}, .xs = {in[0]}, .consts = {in[1]}});
    return outer.ys[0];
  };
  const std::vector<Tensor> inputs = {random::normal({3, 4, 2}, random::Key(3)), random::normal({2}, random::Key(4))};
  const GradcheckResult check = gradcheck([&](const std::vector<Tensor>& in) { return run(in); }, inputs);
  EXPECT_TRUE(check.ok) << check.report;

  const Tensor cotangent = random::normal({3, 2}, random::Key(5));
  auto value_and_gradients = [&](const std::vector<Tensor>& in) {
    GradientTape tape;
    for (const Tensor& t : in) tape.watch(t);
    const Tensor y = run(in);
    std::vector<Tensor> out{y};
    for (const Tensor& g : tape.gradient(ops::sum(ops::multiply(y, cotangent)), in)) out.push_back(g);
    return out;
  };
  const std::vector<Tensor> eager = value_and_gradients(inputs);
  jit::Function compiled(value_and_gradients, "nested");
  const std::vector<Tensor> jit = compiled(inputs);
  for (std::size_t i = 0; i < eager.size(); ++i) expect_near(jit[i], eager[i], "result " + std::to_string(i));
}

TEST(Scan, SecondOrderGradientsMatchFiniteDifferences) {
  // g(w) = d/dw sum(scan(...)): differentiating g differentiates the backward loop.
  const Tensor xs = random::normal({4, 3}, random::Key(6));
  auto gradient = [&](const std::vector<Tensor>& in) {
    GradientTape tape;
    tape.watch(in[0]);
    const ops::ScanResult r = ops::scan(
        [](const auto& carry, const auto& x, const auto& consts) {
          const Tensor h = ops::tanh(ops::add(ops::multiply(carry[0], consts[0]), x[0]));
          return ops::ScanStep{.carry = {h}, .ys = {h}};
        },
        {.carry = {Tensor::zeros({3})}, .xs = {xs}, .consts = {in[0]}});
    return tape.gradient(ops::sum(ops::multiply(r.ys[0], r.ys[0])), {in[0]})[0];
  };
  const GradcheckResult check = gradcheck(gradient, {random::normal({3}, random::Key(7))});
  EXPECT_TRUE(check.ok) << check.report;
}

TEST(Scan, ReplicasRunOneCompiledLoopSideBySide) {
  jit::Graph graph;
  {
    jit::Trace trace;
    const jit::TraceScope active(trace);
    const Tensor xs = trace.input({{50, 8}, DType::float32}, "xs");
    graph = trace.finish({ops::scan(sum_step, {.carry = {Tensor::zeros({8})}, .xs = {xs}}).ys[0]});
  }
  // Two executors of one program share its loop op, and with it the loop's body.
  jit::Executor a(graph), b(graph);
  const Tensor xs_a = random::normal({50, 8}, random::Key(8)), xs_b = random::normal({50, 8}, random::Key(9));
  const std::vector<double> want_a = values(a.run({xs_a})[0]), want_b = values(b.run({xs_b})[0]);
  bool same_a = true, same_b = true;
  std::thread first([&] {
    for (int i = 0; i < 200; ++i) same_a &= values(a.run({xs_a})[0]) == want_a;
  });
  std::thread second([&] {
    for (int i = 0; i < 200; ++i) same_b &= values(b.run({xs_b})[0]) == want_b;
  });
  first.join();
  second.join();
  EXPECT_TRUE(same_a);
  EXPECT_TRUE(same_b);
}

TEST(Scan, EachRunningLoopLeasesAnInstanceOfTheBody) {
  const auto body = jit::eager_loop_body(sum_step, {.carry = {{{2}, DType::float32}}, .x = {{{2}, DType::float32}}});
  const void* first = nullptr;
  const void* second = nullptr;
  {
    const jit::LoopBody::Lease a = body->acquire();
    const jit::LoopBody::Lease b = body->acquire();
    first = a.operator->();
    second = b.operator->();
    EXPECT_NE(first, second);  // two loops at once: two instances
  }
  const jit::LoopBody::Lease again = body->acquire();
  const void* reused = again.operator->();
  EXPECT_TRUE(reused == first || reused == second);  // given back, then taken again: no new one
}

TEST(Scan, ABodyUsingATracedValueFromOutsideNamesTheLayer) {
  Looper leaky("leaky", [](const Tensor& x) {
    return ops::scan([x](const auto& carry, const auto&,
                         const auto&) { return ops::ScanStep{.carry = {ops::add(carry[0], x)}}; },
                     {.carry = {x}}, {.length = 3})
        .carry[0];
  });
  // Eagerly, x holds data: the step may capture it like any constant.
  EXPECT_EQ(values(leaky(Tensor::ones({2}))), (std::vector<double>{4, 4}));
  jit::Function compiled([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{leaky(in[0])}; }, "leaky");
  const std::string m = error_message<JitError>([&] { compiled({Tensor::ones({2})}); });
  EXPECT_TRUE(contains(m, "[scan] in layer 'leaky' (Looper): the loop body uses input 'input_0'")) << m;
  EXPECT_TRUE(contains(m, "ScanArgs::consts")) << m;
}

TEST(Scan, ABodyCapturingAWeightWhoseGradientIsWantedIsAnError) {
  const Tensor w = Tensor::ones({2});
  auto loop = [&] {
    return ops::scan([w](const auto& carry, const auto&,
                         const auto&) { return ops::ScanStep{.carry = {ops::multiply(carry[0], w)}}; },
                     {.carry = {Tensor::ones({2})}}, {.length = 2});
  };
  EXPECT_EQ(values(loop().carry[0]), (std::vector<double>{1, 1}));  // no tape: only its value matters
  GradientTape tape;
  tape.watch(w);
  const std::string m = error_message<ValueError>([&] { loop(); });
  EXPECT_TRUE(contains(m, "gradients flow to")) << m;
  EXPECT_TRUE(contains(m, "ScanArgs::consts")) << m;
}

TEST(Scan, ReadingAValueInTheStepIsRuleOneEagerAndCompiled) {
  Looper reader("reader", [](const Tensor& x) {
    return ops::scan(
               [](const auto& carry, const auto&, const auto&) {
                 return ops::ScanStep{.carry = {carry[0].item() > 0 ? carry[0] : ops::negative(carry[0])}};
               },
               {.carry = {x}}, {.length = 2})
        .carry[0];
  });
  const std::string eager = error_message<JitError>([&] { reader(Tensor::ones({1})); });
  EXPECT_TRUE(contains(eager, "rule 1")) << eager;
  EXPECT_TRUE(contains(eager, "input 'carry_0' of the scan body in layer 'reader' (Looper)")) << eager;
  jit::Function compiled([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{reader(in[0])}; }, "reader");
  const std::string jit = error_message<JitError>([&] { compiled({Tensor::ones({1})}); });
  EXPECT_TRUE(contains(jit, "input 'carry_0' of the scan body in layer 'reader' (Looper)")) << jit;
}

TEST(Scan, StepsThatBreakTheRulesNameTheLayer) {
  Looper growing("growing", [](const Tensor& x) {
    return ops::scan(
               [](const auto& carry, const auto&, const auto&) {
                 return ops::ScanStep{.carry = {ops::concat({carry[0], carry[0]}, 0)}};
               },
               {.carry = {x}}, {.length = 2})
        .carry[0];
  });
  const std::string shape = error_message<ShapeError>([&] { growing(Tensor::ones({2})); });
  EXPECT_TRUE(contains(shape,
                       "[scan] in layer 'growing' (Looper): the step returned carry 0 as float32[4] but it "
                       "came in as float32[2]"))
      << shape;

  Looper reducing("reducing", [](const Tensor& x) {
    return ops::scan([](const auto& carry, const auto&,
                        const auto&) { return ops::ScanStep{.carry = {ops::cross_replica_sum(carry[0], 8)}}; },
                     {.carry = {x}}, {.length = 2})
        .carry[0];
  });
  jit::Function compiled([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{reducing(in[0])}; }, "r");
  const std::string collective = error_message<JitError>([&] { compiled({Tensor::ones({2})}); });
  EXPECT_TRUE(contains(collective, "[scan] in layer 'reducing' (Looper): the step runs cross_replica_sum"))
      << collective;

  const std::string dtype = error_message<TypeError>([] {
    ops::scan([](const auto& carry, const auto&,
                 const auto&) { return ops::ScanStep{.carry = {carry[0]}, .ys = {ops::cast(carry[0], DType::int64)}}; },
              {.carry = {Tensor::ones({2})}}, {.length = 2});
  });
  EXPECT_TRUE(contains(dtype, "must share one dtype")) << dtype;

  const std::string summed = error_message<ValueError>([] {
    ops::scan([](const auto& carry, const auto&,
                 const auto&) { return ops::ScanStep{.carry = {ops::multiply(carry[0], carry[0])}}; },
              {.carry = {Tensor::ones({2})}}, {.length = 2, .summed_carries = {0}});
  });
  EXPECT_TRUE(contains(summed, "carry 0 is in summed_carries")) << summed;
}

TEST(Scan, BadArgumentsNameTheOp) {
  const ops::ScanFunction step = sum_step;
  EXPECT_TRUE(
      contains(error_message<ShapeError>([&] {
                 ops::scan(step, {.carry = {Tensor::zeros({2})}, .xs = {Tensor::zeros({3, 2}), Tensor::zeros({4, 2})}});
               }),
               "[scan] sequence 1 is float32[4,2] but the loop runs 3 steps"));
  EXPECT_TRUE(contains(error_message<ValueError>([&] {
                         ops::scan(step, {.carry = {Tensor::zeros({2})}, .xs = {Tensor::zeros({0, 2})}});
                       }),
                       "[scan] the loop would run 0 steps"));
  EXPECT_TRUE(contains(error_message<ValueError>([&] { ops::scan(step, {.carry = {Tensor::zeros({2})}}); }),
                       "[scan] no sequences and no length"));
  EXPECT_TRUE(contains(error_message<ValueError>([&] {
                         ops::scan([](const auto& c, const auto&, const auto&) { return ops::ScanStep{.carry = {}}; },
                                   {.carry = {Tensor::zeros({2})}}, {.length = 1});
                       }),
                       "the step returned 0 carry tensors"));
}

}  // namespace
}  // namespace kestrel
