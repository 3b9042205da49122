// fused_elementwise with row-broadcast inputs (a keepdims reduction [B, T, 1] against [B, T, C],
// as layer norm's statistics): bitwise agreement with the broadcasting ops, alongside suffix and
// scalar inputs, rows shorter and longer than a block, thread independence, and what is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/thread_pool.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/fused_elementwise.h"
#include "framework/ops/reduce.h"
#include "tests/framework/ops/fused_elementwise_reference.h"
#include "tests/framework/ops/op_case.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;
using Value = ElementwiseBuilder::Value;

std::vector<std::uint32_t> bits(const Tensor& t) { return testing::float_bits(t); }

// Layer norm's centring and scaling, with a gamma suffix: (x - mean) * rstd * gamma.
ElementwiseProgram normalize() {
  ElementwiseBuilder b;
  Value x = b.input(0), mean = b.input(1), variance = b.input(2), gamma = b.input(3);
  return b.build((x - mean) * b.rsqrt(variance + 1e-5) * gamma);
}

TEST(FusedElementwiseRow, RowStatisticsRepeatOverTheTrailingAxis) {
  // Rows of 16 (the shortest run read this way), 128 (below a block) and 700 (above a block).
  for (const Shape& shape : {Shape{5, 16}, Shape{4, 6, 128}, Shape{3, 2, 700}}) {
    std::vector<std::int64_t> row_dims;
    for (int d = 0; d + 1 < shape.rank(); ++d) row_dims.push_back(shape[d]);
    row_dims.push_back(1);
    const Shape row_shape(row_dims);
    Tensor x = testing::uniform_tensor(shape, 1);
    Tensor mean = ops::mean(x, {.axes = {-1}, .keepdims = true});
    Tensor variance = testing::uniform_tensor(row_shape, 2, 0.5, 2.0);
    Tensor gamma = testing::uniform_tensor({shape[-1]}, 3);
    // Exact arithmetic gives the broadcasting ops' bits; rsqrt may round by an ulp differently
    // (vectorized and scalar rsqrt differ, and the standalone op runs both, by position).
    ElementwiseBuilder b;
    ElementwiseProgram scaled = b.build((b.input(0) - b.input(1)) * b.input(2) * b.input(3));
    EXPECT_EQ(bits(ops::fused_elementwise(scaled, {x, mean, variance, gamma})), bits((x - mean) * variance * gamma))
        << shape.to_string();
    Tensor got = ops::fused_elementwise(normalize(), {x, mean, variance, gamma});
    EXPECT_EQ(got.shape(), shape);
    std::vector<float> g = got.to_vector<float>();
    std::vector<float> want = ((x - mean) * ops::rsqrt(variance + 1e-5) * gamma).to_vector<float>();
    for (std::size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], want[i], 1e-6 * (1.0 + std::abs(want[i]))) << i;
  }
}

TEST(FusedElementwiseRow, TheOutputTakesTheLargestInputsShape) {
  Tensor x = testing::uniform_tensor({4, 32}, 4), row = testing::uniform_tensor({4, 1}, 5);
  ElementwiseBuilder b;
  ElementwiseProgram p = b.build(b.input(0) * b.input(1));
  EXPECT_EQ(bits(ops::fused_elementwise(p, {row, x})), bits(row * x));
}

TEST(FusedElementwiseRow, AProgramOfOneRowInputRepeatsEachValue) {
  Tensor row = Tensor::from_vector<float>({1, 2}, {2, 1});
  ElementwiseBuilder b;
  ElementwiseProgram p = b.build(b.input(0));
  Tensor y = ops::fused_elementwise(p, {row}, {.shape = Shape{2, 16}});
  std::vector<float> want(16, 1.0f);
  want.insert(want.end(), 16, 2.0f);
  EXPECT_EQ(y.to_vector<float>(), want);
}

TEST(FusedElementwiseRow, ResultDoesNotDependOnTheThreadCount) {
  Tensor x = testing::uniform_tensor({64, 40, 96}, 6);
  Tensor mean = testing::uniform_tensor({64, 40, 1}, 7), variance = testing::uniform_tensor({64, 40, 1}, 8, 0.5, 2.0);
  Tensor gamma = testing::uniform_tensor({96}, 9);
  const int threads = num_threads();
  set_num_threads(1);
  std::vector<std::uint32_t> one = bits(ops::fused_elementwise(normalize(), {x, mean, variance, gamma}));
  set_num_threads(2);
  std::vector<std::uint32_t> two = bits(ops::fused_elementwise(normalize(), {x, mean, variance, gamma}));
  set_num_threads(threads);
  EXPECT_EQ(one, two);
}

TEST(FusedElementwiseRow, ShortRunsAndOtherBroadcastsAreRefused) {
  EXPECT_EQ(detail::fused_input_repeat({4, 1}, {4, 32}), 32);
  EXPECT_EQ(detail::fused_input_repeat({4, 3, 1, 1}, {4, 3, 4, 8}), 32);
  EXPECT_EQ(detail::fused_input_repeat({32}, {4, 32}), 0);
  EXPECT_EQ(detail::fused_input_repeat({4, 1}, {4, 8}), std::nullopt);          // runs of 8: too short
  EXPECT_EQ(detail::fused_input_repeat({1, 32}, {4, 32}), std::nullopt);        // a leading 1, a rank-2 "suffix"
  EXPECT_EQ(detail::fused_input_repeat({4, 1, 32}, {4, 8, 32}), std::nullopt);  // a 1 in the middle
  ElementwiseBuilder b;
  ElementwiseProgram p = b.build(b.input(0) + b.input(1));
  const std::string m = error_message<ShapeError>([&] {
    ops::fused_elementwise(p, {testing::uniform_tensor({4, 8}, 1), testing::uniform_tensor({4, 1}, 2)});
  });
  EXPECT_TRUE(contains(m, "then 1s")) << m;
}

}  // namespace
}  // namespace kestrel
