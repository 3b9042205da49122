#include "framework/autodiff/gradient_tape.h"

#include <gtest/gtest.h>

#include "framework/autodiff/recording.h"
#include "framework/autodiff/value_and_grad.h"
#include "framework/core/error.h"
#include "framework/ops/ops.h"

namespace kestrel {
namespace {

Tensor vec(std::vector<float> v) {
  auto n = static_cast<std::int64_t>(v.size());
  return Tensor::from_vector(v, {n});
}

void expect_values(const Tensor& t, const std::vector<float>& want) {
  std::vector<float> got = t.to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "element " << i;
}

TEST(GradientTape, SquareGivesTwiceX) {
  Tensor x = vec({1, -2, 3});
  GradientTape tape;
  tape.watch(x);
  Tensor y = ops::sum(ops::multiply(x, x));
  auto grads = tape.gradient(y, {x});
  expect_values(grads[0], {2, -4, 6});
}

TEST(GradientTape, ReusedTensorAccumulatesGradient) {
  Tensor x = vec({1, 2});
  GradientTape tape;
  tape.watch(x);
  Tensor y = ops::sum(ops::add(ops::multiply(x, x), x));  // d/dx = 2x + 1
  expect_values(tape.gradient(y, {x})[0], {3, 5});
}

TEST(GradientTape, UnconnectedSourceGetsZeros) {
  Tensor x = vec({1, 2}), unused = vec({5, 6, 7});
  GradientTape tape;
  tape.watch(x);
  tape.watch(unused);
  Tensor y = ops::sum(x);
  auto grads = tape.gradient(y, {x, unused});
  expect_values(grads[1], {0, 0, 0});
}

TEST(GradientTape, NonPersistentTapeAllowsOneGradient) {
  Tensor x = vec({1});
  GradientTape tape;
  tape.watch(x);
  Tensor y = ops::sum(x);
  tape.gradient(y, {x});
  EXPECT_THROW(tape.gradient(y, {x}), ValueError);
}

TEST(GradientTape, PersistentTapeAllowsSeveralGradients) {
  Tensor x = vec({3});
  GradientTape tape(/*persistent=*/true);
  tape.watch(x);
  Tensor y = ops::sum(ops::multiply(x, x));
  expect_values(tape.gradient(y, {x})[0], {6});
  expect_values(tape.gradient(y, {x})[0], {6});
}

TEST(GradientTape, NestedTapesGiveSecondDerivative) {
  Tensor x = vec({2});
  GradientTape outer;
  outer.watch(x);
  Tensor dy_dx;
  {
    GradientTape inner;
    inner.watch(x);
    Tensor y = ops::sum(ops::multiply(ops::multiply(x, x), x));  // x^3
    dy_dx = inner.gradient(y, {x})[0];                           // 3x^2 = 12
  }
  expect_values(dy_dx, {12});
  Tensor d2 = outer.gradient(ops::sum(dy_dx), {x})[0];  // 6x = 12
  expect_values(d2, {12});
}

TEST(GradientTape, OutputGradientSeedsNonScalarTarget) {
  Tensor x = vec({1, 2});
  GradientTape tape;
  tape.watch(x);
  Tensor y = ops::multiply(x, x);
  expect_values(tape.gradient(y, {x}, vec({10, 100}))[0], {20, 400});
}

TEST(GradientTape, WatchRejectsIntegerTensors) {
  GradientTape tape;
  Tensor ids = Tensor::from_vector<std::int32_t>({1, 2}, {2});
  try {
    tape.watch(ids);
    FAIL() << "expected TypeError";
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("int32[2]"), std::string::npos) << e.what();
  }
}

TEST(GradientTape, NothingIsRecordedOutsideATape) {
  Tensor x = vec({1});
  x.set_requires_grad(true);
  Tensor y = ops::multiply(x, x);
  EXPECT_EQ(y.grad_record(), nullptr);
  EXPECT_FALSE(autodiff::is_recording());
}

TEST(GradientTape, NoGradScopeStopsRecording) {
  Tensor x = vec({1});
  GradientTape tape;
  tape.watch(x);
  Tensor y;
  {
    autodiff::NoGradScope no_grad;
    y = ops::multiply(x, x);
  }
  EXPECT_EQ(y.grad_record(), nullptr);
  EXPECT_TRUE(autodiff::is_recording());
}

TEST(ValueAndGrad, ReturnsValueAndGradients) {
  Tensor a = vec({1, 2, 3}), b = vec({4, 5, 6});
  auto [value, grads] =
      value_and_grad([](const std::vector<Tensor>& x) { return ops::sum(ops::multiply(x[0], x[1])); }, {a, b});
  EXPECT_FLOAT_EQ(static_cast<float>(value.item()), 32.0f);
  expect_values(grads[0], {4, 5, 6});
  expect_values(grads[1], {1, 2, 3});
}

TEST(ValueAndGrad, DoesNotMarkTheCallersTensors) {
  Tensor a = vec({1, 2});
  grad([](const std::vector<Tensor>& x) { return ops::sum(x[0]); }, {a});
  EXPECT_FALSE(a.requires_grad());
}

TEST(ValueAndGrad, IntegerArgumentsGetNoGradient) {
  Tensor w = vec({1, 2, 3});
  Tensor ids = Tensor::from_vector<std::int64_t>({2, 0}, {2});
  auto grads = grad([](const std::vector<Tensor>& x) { return ops::sum(ops::gather(x[0], x[1])); }, {w, ids});
  expect_values(grads[0], {1, 0, 1});
  EXPECT_FALSE(grads[1].defined());
}

TEST(ValueAndGrad, NonScalarResultNeedsOutputGradient) {
  Tensor a = vec({1, 2});
  try {
    value_and_grad([](const std::vector<Tensor>& x) { return ops::multiply(x[0], x[0]); }, {a});
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("return a scalar"), std::string::npos) << e.what();
  }
}

TEST(ValueAndGrad, GradOfGradThroughNesting) {
  // f(x) = sum(x^3); grad(grad(f)) summed gives 6x.
  Tensor x = vec({1, 3});
  auto second = grad(
      [](const std::vector<Tensor>& outer) {
        auto inner =
            grad([](const std::vector<Tensor>& v) { return ops::sum(ops::multiply(ops::multiply(v[0], v[0]), v[0])); },
                 {outer[0]});
        return ops::sum(inner[0]);
      },
      {x});
  expect_values(second[0], {6, 18});
}

}  // namespace
}  // namespace kestrel
