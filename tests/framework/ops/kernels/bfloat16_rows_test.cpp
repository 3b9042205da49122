// softmax's and layer norm's kernels over bfloat16 (kernels::cpu().softmax,
// layer_norm(_backprop)_bfloat16) against widening every bfloat16
// operand whole, the float32 kernel and rounding (what the dispatcher would otherwise do): the
// same bits, over rows that split over threads, softmax over inner axes, odd row lengths (runs at
// every alignment) and float32 operands mixed in. framework_ops_test runs once per CPU level.
#include "framework/ops/kernels/bfloat16_rows.h"

#include <gtest/gtest.h>

#include <array>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "framework/ops/kernels/cpu_kernels.h"
#include "tests/support/same_bits.h"
#include "tests/support/thread_count_guard.h"

namespace kestrel::kernels {
namespace {

using kestrel::testing::same_bits;
using kestrel::testing::ThreadCountGuard;

Tensor random_tensor(const Shape& shape, DType dtype, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.5f, 3.0f);
  std::vector<float> values(static_cast<std::size_t>(shape.numel()));
  for (float& v : values) v = normal(rng);
  const Tensor wide = Tensor::from_vector<float>(values, shape);
  if (dtype == DType::float32) return wide;
  Tensor out = Tensor::empty(shape, dtype);
  cpu().convert(wide.view(), out.view());
  return out;
}

Tensor converted(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor out = Tensor::empty(t.shape(), dtype);
  cpu().convert(t.view(), out.view());
  return out;
}

TEST(Bfloat16Rows, SoftmaxHasTheBitsOfWideningComputingAndRounding) {
  ThreadCountGuard guard(2);
  for (const bool log : {false, true}) {
    for (const auto& [shape, axis] : std::vector<std::pair<Shape, int>>{
             {{301, 129}, 1}, {{7, 1000}, 1}, {{5, 33, 7}, 1}, {{3, 9, 300}, 1}, {{40, 11}, 0}, {{50, 601}, 0}}) {
      SCOPED_TRACE(shape.to_string() + " axis " + std::to_string(axis) + (log ? " log" : ""));
      const Tensor x = random_tensor(shape, DType::bfloat16, 1);
      Tensor got = Tensor::empty(shape, DType::bfloat16);
      cpu().softmax(x.view(), got.view(), axis, log);
      const Tensor wide = converted(x, DType::float32);
      Tensor wide_out = Tensor::empty(shape, DType::float32);
      cpu().softmax(wide.view(), wide_out.view(), axis, log);
      EXPECT_TRUE(same_bits(got, converted(wide_out, DType::bfloat16)));
    }
  }
}

TEST(Bfloat16Rows, LayerNormHasTheBitsOfWideningComputingAndRounding) {
  ThreadCountGuard guard(2);
  constexpr float kEpsilon = 1e-5f;
  const DType bf16 = DType::bfloat16, f32 = DType::float32;
  // x, gamma, beta (or dy) dtypes: all bfloat16, mixed_bfloat16's float32 parameters, and float32 x.
  for (const auto& [x_type, gamma_type, third_type] :
       std::vector<std::array<DType, 3>>{{bf16, bf16, bf16}, {bf16, f32, f32}, {f32, bf16, f32}, {bf16, f32, bf16}}) {
    for (const Shape& shape : {Shape{301, 129}, Shape{4, 7, 1000}, Shape{3, 5}}) {
      SCOPED_TRACE(shape.to_string() + " " + std::string(to_string(x_type)) + "/" + std::string(to_string(gamma_type)) +
                   "/" + std::string(to_string(third_type)));
      const std::int64_t d = shape[-1];
      const Tensor x = random_tensor(shape, x_type, 2), gamma = random_tensor({d}, gamma_type, 3);
      const Tensor beta = random_tensor({d}, third_type, 4), dy = random_tensor(shape, third_type, 5);
      const Tensor wx = converted(x, f32), wgamma = converted(gamma, f32);
      const Tensor wbeta = converted(beta, f32), wdy = converted(dy, f32);

      Tensor got = Tensor::empty(shape, x_type), want = Tensor::empty(shape, f32);
      layer_norm_bfloat16(x.view(), gamma.view(), beta.view(), got.view(), kEpsilon);
      cpu().layer_norm(wx.view(), wgamma.view().as<float>(), wbeta.view().as<float>(), want.view(), kEpsilon);
      EXPECT_TRUE(same_bits(got, converted(want, x_type))) << "layer_norm";

      Tensor dx = Tensor::empty(shape, x_type), want_dx = Tensor::empty(shape, f32);
      layer_norm_backprop_bfloat16(x.view(), gamma.view(), dy.view(), dx.view(), kEpsilon);
      cpu().layer_norm_backprop(wx.view(), wgamma.view().as<float>(), wdy.view(), want_dx.view(), kEpsilon);
      EXPECT_TRUE(same_bits(dx, converted(want_dx, x_type))) << "layer_norm_backprop";
    }
  }
}

}  // namespace
}  // namespace kestrel::kernels
