// Every op of the table, compiled: the forward value and the gradients of a traced, compiled
// function must match the eager ones (what makes eager a faithful debugger for jit_compile).
#include <gtest/gtest.h>

#include <cmath>

#include "framework/autodiff/gradient_tape.h"
#include "framework/jit/function.h"
#include "framework/ops/ops.h"
#include "tests/framework/ops/op_case.h"

namespace kestrel::testing {
namespace {

// The op's output, then d(sum(output * cotangent))/d(input) for every floating input.
std::vector<Tensor> value_and_gradients(const OpCase& c, const std::vector<Tensor>& inputs, const Tensor& cotangent) {
  const bool with_gradients = c.no_gradient_because.empty();
  GradientTape tape;
  std::vector<Tensor> sources;
  if (with_gradients) {
    for (const Tensor& t : inputs) {
      if (is_floating(t.dtype())) {
        tape.watch(t);
        sources.push_back(t);
      }
    }
  }
  Tensor out = c.run(inputs);
  std::vector<Tensor> results{out};
  if (!sources.empty()) {
    Tensor target = ops::sum(ops::multiply(ops::cast(out, DType::float32), cotangent));
    for (const Tensor& g : tape.gradient(target, sources)) results.push_back(g);
  }
  return results;
}

void expect_near(const Tensor& jit, const Tensor& eager, const std::string& what) {
  ASSERT_EQ(jit.defined(), eager.defined()) << what;
  if (!eager.defined()) return;
  ASSERT_EQ(jit.spec(), eager.spec()) << what;
  std::vector<double> a = jit.to_vector<double>();
  std::vector<double> b = eager.to_vector<double>();
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(b[i])) {
      EXPECT_TRUE(std::isnan(a[i])) << what << " element " << i;
      continue;
    }
    ASSERT_LE(std::fabs(a[i] - b[i]), 1e-5 * (1.0 + std::fabs(b[i])))
        << what << " element " << i << ": jit " << a[i] << ", eager " << b[i];
  }
}

class JitOpTable : public ::testing::TestWithParam<std::string> {};

TEST_P(JitOpTable, CompiledValueAndGradientsMatchEager) {
  const OpCase& c = find_op_case(GetParam());
  const std::vector<Tensor> inputs = c.make_inputs();
  const Tensor probe = c.run(inputs);
  const Tensor cotangent = uniform_tensor(probe.shape(), 99);
  const std::vector<Tensor> eager = value_and_gradients(c, inputs, cotangent);

  jit::Function compiled([&](const std::vector<Tensor>& in) { return value_and_gradients(c, in, cotangent); }, c.label);
  const std::vector<Tensor> jit = compiled(inputs);
  ASSERT_EQ(jit.size(), eager.size()) << c.label;
  expect_near(jit[0], eager[0], c.label + " value");
  for (std::size_t i = 1; i < jit.size(); ++i)
    expect_near(jit[i], eager[i], c.label + " gradient " + std::to_string(i));
}

INSTANTIATE_TEST_SUITE_P(Ops, JitOpTable, ::testing::ValuesIn(op_case_labels()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace kestrel::testing
