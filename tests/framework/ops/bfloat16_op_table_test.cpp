// The op test table in bfloat16: every case whose inputs include float32 tensors runs again with
// them in bfloat16, against the same op in float32 on the same (rounded) values. Forward results
// may differ by bfloat16's rounding of the result (and of each step of a composite op); gradients,
// computed in bfloat16 throughout, by a few of those roundings. Non-float results (comparisons,
// argmax) must be equal.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/ops/ops.h"
#include "tests/framework/ops/op_case.h"

namespace kestrel::testing {
namespace {

// bfloat16 keeps 8 significant bits: a rounding is at most 2^-9 of the value. Composite ops round
// at each step, and a gradient's chain rounds at every op of the backward pass.
constexpr double kForwardTolerance = 1.0 / 64;
constexpr double kGradientTolerance = 1.0 / 16;

bool has_float32_input(const Inputs& inputs) {
  return std::any_of(inputs.begin(), inputs.end(),
                     [](const Tensor& t) { return t.defined() && t.dtype() == DType::float32; });
}

// The float32 inputs as `dtype` after rounding to bfloat16: the same values either way.
Inputs rounded_to_bfloat16(const Inputs& inputs, DType dtype) {
  Inputs out;
  for (const Tensor& t : inputs) {
    if (!t.defined() || t.dtype() != DType::float32) {
      out.push_back(t);
      continue;
    }
    const Tensor narrow = ops::cast(t, DType::bfloat16);
    out.push_back(dtype == DType::bfloat16 ? narrow : ops::cast(narrow, DType::float32));
  }
  return out;
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

class BfloatOpTable : public ::testing::TestWithParam<std::string> {
 protected:
  // The case's op on bfloat16 inputs, or a skip when the case has none or the op takes none.
  bool runs_in_bfloat16(const OpCase& c) {
    if (!has_float32_input(c.make_inputs())) {
      skip_reason_ = "no float32 input";
      return false;
    }
    try {
      c.run(rounded_to_bfloat16(c.make_inputs(), DType::bfloat16));
    } catch (const TypeError& e) {
      skip_reason_ = std::string("takes no bfloat16 input: ") + e.what();
      return false;
    }
    return true;
  }
  std::string skip_reason_;
};

TEST_P(BfloatOpTable, ForwardMatchesFloat32OnTheSameValues) {
  const OpCase& c = find_op_case(GetParam());
  if (!runs_in_bfloat16(c)) GTEST_SKIP() << skip_reason_;
  const Tensor got = c.run(rounded_to_bfloat16(c.make_inputs(), DType::bfloat16));
  const Tensor want = c.run(rounded_to_bfloat16(c.make_inputs(), DType::float32));
  ASSERT_EQ(got.shape(), want.shape()) << c.label;
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  const bool exact = !is_floating(want.dtype());
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << c.label << " element " << i;
      continue;
    }
    const double error = std::fabs(g[i] - w[i]) / (1.0 + std::fabs(w[i]));
    ASSERT_LE(error, exact ? 0.0 : kForwardTolerance)
        << c.label << " element " << i << ": bfloat16 " << g[i] << ", float32 " << w[i];
  }
}

// The gradient of sum(output * direction) with respect to each float input, in bfloat16 and in
// float32 on the same values.
std::vector<Tensor> gradients(const OpCase& c, const Inputs& inputs) {
  GradientTape tape;
  std::vector<Tensor> sources;
  for (const Tensor& t : inputs) {
    if (t.defined() && is_floating(t.dtype())) {
      tape.watch(t);
      sources.push_back(t);
    }
  }
  const Tensor out = ops::cast(c.run(inputs), DType::float32);
  const Tensor direction = random::normal(out.shape(), random::Key(11));
  return tape.gradient(ops::sum(ops::multiply(out, direction)), sources);
}

TEST_P(BfloatOpTable, GradientMatchesFloat32OnTheSameValues) {
  const OpCase& c = find_op_case(GetParam());
  if (!c.no_gradient_because.empty()) GTEST_SKIP() << c.no_gradient_because;
  if (!runs_in_bfloat16(c)) GTEST_SKIP() << skip_reason_;
  const std::vector<Tensor> got = gradients(c, rounded_to_bfloat16(c.make_inputs(), DType::bfloat16));
  const std::vector<Tensor> want = gradients(c, rounded_to_bfloat16(c.make_inputs(), DType::float32));
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t k = 0; k < want.size(); ++k) {
    const std::vector<double> g = ops::cast(got[k], DType::float32).to_vector<double>();
    const std::vector<double> w = want[k].to_vector<double>();
    const double scale = 1.0 + max_abs(w);
    for (std::size_t i = 0; i < g.size(); ++i) {
      ASSERT_LE(std::fabs(g[i] - w[i]) / scale, kGradientTolerance)
          << c.label << " input " << k << " element " << i << ": bfloat16 " << g[i] << ", float32 " << w[i];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, BfloatOpTable, ::testing::ValuesIn(op_case_labels()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace kestrel::testing
