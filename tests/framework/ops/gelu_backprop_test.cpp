// gelu's gradient through gelu_backprop, beyond the op table's values: saturated inputs give the
// slopes 1 and 0 (never 0 * inf) at every CPU level, and a second derivative of exactly 0; a NaN
// stays a NaN; a float32 output gradient meets a bfloat16 gelu; the errors name the op.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/error.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;

TEST(GeluBackprop, SaturatedInputsGiveSlopesOneAndZero) {
  const std::vector<float> x = {-3e38f, -2e13f, -1e4f, -30.0f, 30.0f, 1e4f, 2e13f, 3e38f};
  const std::vector<float> want = {0.0f, 0.0f, 0.0f, 0.0f, 1.0f, 1.0f, 1.0f, 1.0f};
  const Tensor xs = Tensor::from_vector(x, {8});
  const Tensor dy = Tensor::ones({8});
  for (const bool approximate : {false, true}) {
    SCOPED_TRACE(approximate ? "tanh" : "erf");
    const std::vector<float> got = ops::gelu_backprop(xs, dy, {.approximate = approximate}).to_vector<float>();
    // Within float32's rounding of 1 (vector exp stops short of 0, so a tail of 1e-38 may remain).
    for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-7) << "x = " << x[i];
    // Its own gradient (gelu's second derivative) is 0 there, not NaN.
    GradientTape tape;
    tape.watch(xs);
    const Tensor slope = ops::gelu_backprop(xs, dy, {.approximate = approximate});
    for (float v : tape.gradient(ops::sum(slope), {xs})[0].to_vector<float>()) EXPECT_EQ(v, 0.0f);
    // A NaN stays a NaN.
    const Tensor nan = Tensor::from_vector<float>({std::nanf("")}, {1});
    const Tensor nan_slope = ops::gelu_backprop(nan, Tensor::ones({1}), {.approximate = approximate});
    EXPECT_TRUE(std::isnan(nan_slope.to_vector<float>()[0]));
  }
}

TEST(GeluBackprop, AFloat32OutputGradientMeetsABfloat16Gelu) {
  const Tensor x = ops::cast(Tensor::from_vector<float>({-1.0f, 0.5f, 2.0f}, {3}), DType::bfloat16);
  GradientTape tape;
  tape.watch(x);
  const Tensor y = ops::gelu(x);
  const Tensor dx = tape.gradient(y, {x}, Tensor::ones({3}))[0];
  ASSERT_EQ(dx.dtype(), DType::bfloat16);
  const Tensor want = ops::gelu_backprop(x, ops::cast(Tensor::ones({3}), DType::bfloat16));
  EXPECT_EQ(ops::cast(dx, DType::float32).to_vector<float>(), ops::cast(want, DType::float32).to_vector<float>());
}

TEST(GeluBackprop, ErrorsNameTheOp) {
  std::string m = error_message<ShapeError>([] { ops::gelu_backprop(Tensor::zeros({2, 3}), Tensor::zeros({3})); });
  EXPECT_TRUE(contains(m, "[gelu_backprop] x is float32[2,3] and dy is float32[3]")) << m;
  m = error_message<TypeError>([] { ops::gelu_backprop(Tensor::zeros({3}), Tensor::zeros({3}, DType::bfloat16)); });
  EXPECT_TRUE(contains(m, "both must be float32, or both bfloat16")) << m;
}

}  // namespace
}  // namespace kestrel
