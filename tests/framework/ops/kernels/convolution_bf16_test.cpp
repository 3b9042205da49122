// conv2d and its two gradients on bfloat16 (oneDNN's direct convolution for few input channels,
// im2col and the bfloat16 gemm otherwise): against float32 on the same values within bfloat16's
// rounding, over strides, padding, 1x1 filters and batches split into several runs, and the same
// bits run to run. framework_ops_test runs once per CPU level the machine has.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "framework/ops/conv.h"
#include "framework/ops/elementwise.h"
#include "tests/support/same_bits.h"
#include "tests/support/thread_count_guard.h"

namespace kestrel::ops {
namespace {

using kestrel::testing::same_bits;
using kestrel::testing::ThreadCountGuard;

struct ConvCase {
  std::string label;
  Shape x, w;
  Conv2DOptions options;
};

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> table = {
      // Few input channels: oneDNN's direct kernels, the batch split into runs (and below AVX-512
      // the runs into chunks of one image, for large outputs).
      {.label = "direct", .x = {16, 28, 28, 3}, .w = {3, 3, 3, 16}},
      {.label = "direct_chunks", .x = {8, 96, 96, 1}, .w = {3, 3, 1, 16}},
      {.label = "direct_strided_same",
       .x = {5, 11, 9, 2},
       .w = {3, 3, 2, 8},
       .options = {.strides = {2, 2}, .padding = Padding::same}},
      // 24 input channels: im2col and the bfloat16 gemm.
      {.label = "im2col", .x = {4, 10, 10, 24}, .w = {3, 3, 24, 40}},
      {.label = "im2col_strided_same",
       .x = {3, 9, 11, 20},
       .w = {5, 3, 20, 12},
       .options = {.strides = {2, 1}, .padding = Padding::same}},
      {.label = "pointwise", .x = {2, 7, 7, 32}, .w = {1, 1, 32, 48}},
  };
  return table;
}

// Uniform values in [-1, 1) that bfloat16 holds exactly, as float32.
Tensor representable(const Shape& shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (float& x : v) x = static_cast<float>(bfloat16(uniform(rng)));
  return Tensor::from_vector<float>(v, shape);
}

Tensor bf16(const Tensor& t) { return cast(t, DType::bfloat16); }

// got (bfloat16) within one rounding of want (float32: half an ulp, at most 2^-8 relative), plus float32 sums of `depth` products in
// another order.
void expect_near(const std::string& what, const Tensor& got, const Tensor& want, std::int64_t depth) {
  ASSERT_EQ(got.dtype(), DType::bfloat16) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const std::vector<float> g = cast(got, DType::float32).to_vector<float>();
  const std::vector<float> w = want.to_vector<float>();
  const double order = 1e-6 * (1.0 + static_cast<double>(depth));
  for (std::size_t i = 0; i < w.size(); ++i) {
    ASSERT_NEAR(g[i], w[i], std::abs(w[i]) * std::ldexp(1.0, -8) + order) << what << ": element " << i;
  }
}

TEST(ConvolutionBf16, MatchesFloat32WithinBfloat16Rounding) {
  for (const int threads : {1, 2}) {
    ThreadCountGuard guard(threads);
    for (const ConvCase& c : conv_cases()) {
      SCOPED_TRACE(c.label + ", threads " + std::to_string(threads));
      const Tensor x = representable(c.x, 1), w = representable(c.w, 2);
      const Tensor y = conv2d(x, w, c.options);
      const Tensor dy = representable(y.shape(), 3);
      const std::int64_t pixels = y.shape()[0] * y.shape()[1] * y.shape()[2];

      const Tensor y16 = conv2d(bf16(x), bf16(w), c.options);
      expect_near("conv2d", y16, y, c.w[0] * c.w[1] * c.w[2]);
      expect_near("conv2d_backprop_input", conv2d_backprop_input(bf16(dy), bf16(w), c.x, c.options),
                  conv2d_backprop_input(dy, w, c.x, c.options), c.w[0] * c.w[1] * c.w[3]);
      expect_near("conv2d_backprop_filter", conv2d_backprop_filter(bf16(x), bf16(dy), c.w, c.options),
                  conv2d_backprop_filter(x, dy, c.w, c.options), pixels);
    }
  }
}

TEST(ConvolutionBf16, TheSameBitsRunToRun) {
  ThreadCountGuard guard(2);
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(c.label);
    const Tensor x = bf16(representable(c.x, 4)), w = bf16(representable(c.w, 5));
    const Tensor y = conv2d(x, w, c.options);
    const Tensor dy = bf16(representable(y.shape(), 6));
    EXPECT_TRUE(same_bits(conv2d(x, w, c.options), y)) << "conv2d";
    EXPECT_TRUE(same_bits(conv2d_backprop_input(dy, w, c.x, c.options), conv2d_backprop_input(dy, w, c.x, c.options)))
        << "conv2d_backprop_input";
    EXPECT_TRUE(same_bits(conv2d_backprop_filter(x, dy, c.w, c.options), conv2d_backprop_filter(x, dy, c.w, c.options)))
        << "conv2d_backprop_filter";
  }
}

}  // namespace
}  // namespace kestrel::ops
