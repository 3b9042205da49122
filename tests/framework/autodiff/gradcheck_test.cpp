#include "framework/autodiff/gradcheck.h"

#include <gtest/gtest.h>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/ops.h"

namespace kestrel {
namespace {

// x^3 with a deliberately wrong gradient (2x instead of 3x^2), built on the Primitive interface
// as a custom op would be (it borrows pow's id): gradcheck must catch the mistake.
class WrongCube final : public PrimitiveOf<WrongCube, OpId::pow> {
 public:
  auto fields() const { return std::tuple<>(); }
  TensorSpec infer(std::span<const TensorSpec> in) const override { return in[0]; }
  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    for (std::int64_t i = 0; i < out.numel(); ++i) {
      float x = in[0].as<float>()[i];
      out.as<float>()[i] = x * x * x;
    }
  }
  std::vector<Tensor> vjp(const VjpArgs& v) const override {
    return {ops::multiply(v.cotangent, ops::multiply(v.primals[0], ops::scalar_like(v.primals[0], 2.0)))};
  }
};

TEST(Gradcheck, PassesForCorrectGradients) {
  Tensor x = random::normal({3, 4}, random::Key(1));
  Tensor w = random::normal({4, 2}, random::Key(2));
  auto f = [](const std::vector<Tensor>& a) { return ops::tanh(ops::matmul(a[0], a[1])); };
  GradcheckResult r = gradcheck(f, {x, w});
  EXPECT_TRUE(r.ok) << r.report;
  EXPECT_LT(r.max_abs_error, 1e-2);
}

TEST(Gradcheck, CatchesAWrongGradient) {
  Tensor x = Tensor::from_vector<float>({0.5f, 1.5f, -2.0f}, {3});
  auto f = [](const std::vector<Tensor>& a) { return detail::apply_new<WrongCube>({a[0]}); };
  GradcheckResult r = gradcheck(f, {x});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.report.find("analytic"), std::string::npos) << r.report;
}

TEST(Gradcheck, RejectsBfloat16Inputs) {
  Tensor x = ops::cast(Tensor::ones({2}), DType::bfloat16);
  auto f = [](const std::vector<Tensor>& a) { return a[0]; };
  EXPECT_THROW(gradcheck(f, {x}), TypeError);
}

TEST(Gradcheck, HoldsIntegerInputsFixed) {
  Tensor table = random::normal({5, 3}, random::Key(3));
  Tensor ids = Tensor::from_vector<std::int32_t>({4, 0, 4}, {3});
  auto f = [](const std::vector<Tensor>& a) { return ops::gather(a[0], a[1]); };
  GradcheckResult r = gradcheck(f, {table, ids});
  EXPECT_TRUE(r.ok) << r.report;
}

}  // namespace
}  // namespace kestrel
