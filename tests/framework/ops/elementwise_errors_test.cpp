// Error messages of the elementwise and reduction ops: each names the op and the shapes.
#include <gtest/gtest.h>

#include "framework/autodiff/value_and_grad.h"
#include "framework/core/error.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::error_message;

TEST(ElementwiseErrors, ShapesThatDoNotBroadcastNameOpAndShapes) {
  std::string m = error_message<ShapeError>([] { ops::add(Tensor::zeros({2, 3}), Tensor::zeros({4})); });
  EXPECT_NE(m.find("[add]"), std::string::npos) << m;
  EXPECT_NE(m.find("[2,3]"), std::string::npos) << m;
  EXPECT_NE(m.find("[4]"), std::string::npos) << m;
  EXPECT_NE(m.find("broadcast"), std::string::npos) << m;
}

TEST(ElementwiseErrors, MixedIntAndFloatSuggestsCast) {
  std::string m = error_message<TypeError>([] { ops::multiply(Tensor::zeros({2}), Tensor::zeros({2}, DType::int32)); });
  EXPECT_NE(m.find("[multiply]"), std::string::npos) << m;
  EXPECT_NE(m.find("float32[2]"), std::string::npos) << m;
  EXPECT_NE(m.find("int32[2]"), std::string::npos) << m;
  EXPECT_NE(m.find("ops::cast"), std::string::npos) << m;
}

TEST(ElementwiseErrors, FloatWithBfloat16ComputesInFloat32) {
  Tensor y = ops::add(Tensor::ones({2}), ops::cast(Tensor::ones({2}), DType::bfloat16));
  EXPECT_EQ(y.dtype(), DType::float32);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{2, 2}));
}

TEST(ElementwiseErrors, TranscendentalOfIntegerIsATypeError) {
  std::string m = error_message<TypeError>([] { ops::exp(Tensor::zeros({3}, DType::int64)); });
  EXPECT_NE(m.find("[exp]"), std::string::npos) << m;
  EXPECT_NE(m.find("int64[3]"), std::string::npos) << m;
}

TEST(ElementwiseErrors, WhereNeedsBoolCondition) {
  std::string m =
      error_message<TypeError>([] { ops::where(Tensor::ones({2}), Tensor::ones({2}), Tensor::zeros({2})); });
  EXPECT_NE(m.find("[where]"), std::string::npos) << m;
  EXPECT_NE(m.find("bool"), std::string::npos) << m;
}

TEST(ElementwiseErrors, IntegerDivisionByZeroThrowsInsteadOfTrapping) {
  Tensor a = Tensor::from_vector<std::int32_t>({4, 5}, {2});
  Tensor b = Tensor::from_vector<std::int32_t>({2, 0}, {2});
  std::string m = error_message<ValueError>([&] { ops::divide(a, b); });
  EXPECT_NE(m.find("division by zero"), std::string::npos) << m;
}

TEST(ElementwiseErrors, BoolArithmeticIsRejected) {
  Tensor t = Tensor::from_vector<bool>({true, false}, {2});
  EXPECT_THROW(ops::add(t, t), TypeError);
  EXPECT_EQ(ops::equal(t, t).to_vector<bool>(), (std::vector<bool>{true, true}));
}

TEST(ReduceErrors, AxisOutOfRangeNamesOpAndRank) {
  std::string m = error_message<ShapeError>([] { ops::sum(Tensor::zeros({2, 3}), {.axes = {2}}); });
  EXPECT_NE(m.find("[sum]"), std::string::npos) << m;
  EXPECT_NE(m.find("axis 2"), std::string::npos) << m;
  EXPECT_NE(m.find("rank 2"), std::string::npos) << m;
}

TEST(ReduceErrors, RepeatedAxisIsRejected) {
  EXPECT_THROW(ops::max(Tensor::zeros({2, 3}), {.axes = {1, -1}}), ShapeError);
}

TEST(ReduceErrors, MaxOverEmptyAxisIsRejected) {
  EXPECT_THROW(ops::max(Tensor::zeros({2, 0}), {.axes = {1}}), ShapeError);
  EXPECT_EQ(ops::sum(Tensor::zeros({2, 0}), {.axes = {1}}).to_vector<float>(), (std::vector<float>{0, 0}));
}

TEST(ElementwiseGradients, CastPassesGradientBetweenFloatTypes) {
  auto grads = grad(
      [](const std::vector<Tensor>& a) {
        return ops::sum(ops::cast(ops::cast(a[0], DType::bfloat16), DType::float32));
      },
      {Tensor::from_vector<float>({0.3f, 1.7f}, {2})});
  EXPECT_EQ(grads[0].dtype(), DType::float32);
  EXPECT_EQ(grads[0].to_vector<float>(), (std::vector<float>{1, 1}));
}

TEST(ElementwiseGradients, MaxSharesGradientAmongTies) {
  auto grads = grad([](const std::vector<Tensor>& a) { return ops::max(a[0]); },
                    {Tensor::from_vector<float>({1, 3, 3, 2}, {4})});
  EXPECT_EQ(grads[0].to_vector<float>(), (std::vector<float>{0, 0.5f, 0.5f, 0}));
}

TEST(ElementwiseOperators, NumbersTakeTheTensorsDtype) {
  Tensor x = Tensor::from_vector<std::int32_t>({1, 2}, {2});
  Tensor y = x * 3.0 + 1.0;
  EXPECT_EQ(y.dtype(), DType::int32);
  EXPECT_EQ(y.to_vector<std::int32_t>(), (std::vector<std::int32_t>{4, 7}));
  Tensor z = 1.0 - Tensor::ones({2});
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{0, 0}));
}

}  // namespace
}  // namespace kestrel
