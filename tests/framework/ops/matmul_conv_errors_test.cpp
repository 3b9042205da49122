// Error messages of matmul, conv2d and pooling: each bad input throws the right Error subclass,
// and the message names the op, shows the shapes, and says what would be right.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "framework/autodiff/value_and_grad.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/ops/conv.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/matmul.h"
#include "framework/ops/reduce.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;

Tensor zeros(const Shape& shape, DType dtype = DType::float32) { return Tensor::zeros(shape, dtype); }

TEST(MatmulErrors, InnerDimsDiffer) {
  std::string m = error_message<ShapeError>([] { ops::matmul(zeros({32, 784}), zeros({512, 256})); });
  EXPECT_EQ(m, "[matmul] a is [32,784], b is [512,256]: inner dims differ (784 vs 512)");
}

TEST(MatmulErrors, TransposedOperandIsNamed) {
  std::string m = error_message<ShapeError>([] { ops::matmul(zeros({3, 4}), zeros({5, 6}), {.transpose_a = true}); });
  EXPECT_TRUE(contains(m, "[matmul] a is [3,4] (transpose_a), b is [5,6]")) << m;
  EXPECT_TRUE(contains(m, "inner dims differ (3 vs 5)")) << m;
}

TEST(MatmulErrors, IntegerOperandsAreATypeError) {
  std::string m = error_message<TypeError>([] {
    ops::matmul(zeros({2, 3}, DType::int32), zeros({3, 4}, DType::int32));
  });
  EXPECT_TRUE(contains(m, "[matmul] a is int32[2,3], b is int32[3,4]")) << m;
  EXPECT_TRUE(contains(m, "float32 or bfloat16")) << m;
  EXPECT_TRUE(contains(m, "ops::cast")) << m;
}

TEST(MatmulErrors, VectorOperandNeedsAMatrix) {
  std::string m = error_message<ShapeError>([] { ops::matmul(zeros({4}), zeros({4, 5})); });
  EXPECT_TRUE(contains(m, "[matmul] a is [4], b is [4,5]")) << m;
  EXPECT_TRUE(contains(m, "at least 2 dims")) << m;
}

TEST(MatmulErrors, BatchDimsMustMatch) {
  std::string m = error_message<ShapeError>([] { ops::matmul(zeros({2, 3, 4}), zeros({3, 4, 5})); });
  EXPECT_TRUE(contains(m, "[matmul] a is [2,3,4], b is [3,4,5]")) << m;
  EXPECT_TRUE(contains(m, "batch dims [2] and [3] differ")) << m;
}

TEST(MatmulErrors, UndefinedOperand) {
  std::string m = error_message<ValueError>([] { ops::matmul(zeros({2, 3}), Tensor()); });
  EXPECT_TRUE(contains(m, "[matmul] b is an undefined tensor")) << m;
}

TEST(MatmulErrors, ResidualOfAnotherShapeOrDtype) {
  std::string m = error_message<ShapeError>([] {
    ops::matmul(zeros({3, 4}), zeros({4, 5}), {.residual = zeros({5})});
  });
  EXPECT_EQ(m,
            "[matmul] the residual is float32[5]; it must be float32[3,5], the product's shape and dtype (a "
            "residual does not broadcast)");
  m = error_message<ShapeError>([] { ops::matmul(zeros({2, 3, 4}), zeros({4, 5}), {.residual = zeros({6, 5})}); });
  EXPECT_TRUE(contains(m, "the residual is float32[6,5]; it must be float32[2,3,5]")) << m;
  m = error_message<TypeError>([] {
    ops::matmul(zeros({3, 4}), zeros({4, 5}), {.residual = zeros({3, 5}, DType::bfloat16)});
  });
  EXPECT_TRUE(contains(m, "the residual is bfloat16[3,5]; it must be float32[3,5]")) << m;
  EXPECT_TRUE(contains(m, "(cast it with ops::cast)")) << m;
}

// The residual is added as it is: its gradient is the cotangent, and the others are a product's.
TEST(MatmulGradients, AResidualsGradientIsTheCotangent) {
  const Tensor h = random::uniform({2, 3, 4}, random::Key(3)), w = random::uniform({4, 5}, random::Key(4));
  const Tensor r = random::uniform({2, 3, 5}, random::Key(5)), g = random::uniform({2, 3, 5}, random::Key(6));
  const auto loss = [&g](const std::vector<Tensor>& a, bool fused) {
    const Tensor y = fused ? ops::matmul(a[0], a[1], {.residual = a[2]}) : ops::add(ops::matmul(a[0], a[1]), a[2]);
    return ops::sum(ops::multiply(y, g));
  };
  const std::vector<Tensor> got = grad([&](const std::vector<Tensor>& a) { return loss(a, true); }, {h, w, r});
  const std::vector<Tensor> want = grad([&](const std::vector<Tensor>& a) { return loss(a, false); }, {h, w, r});
  ASSERT_EQ(got.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(got[i].shape(), want[i].shape());
    EXPECT_EQ(got[i].to_vector<float>(), want[i].to_vector<float>()) << "operand " << i;
  }
}

// Not an error, but the reason the flattening exists: a Dense kernel's gradient must keep the
// kernel's shape, or the optimizer update would fail with a shape error of its own.
TEST(MatmulGradients, SequenceTimesMatrixGivesA2DWeightGradient) {
  Tensor h = random::uniform({2, 3, 4}, random::Key(1));
  Tensor w = random::uniform({4, 5}, random::Key(2));
  std::vector<Tensor> grads =
      grad([](const std::vector<Tensor>& a) { return ops::sum(ops::matmul(a[0], a[1])); }, {h, w});
  EXPECT_EQ(grads[0].shape(), Shape({2, 3, 4}));
  EXPECT_EQ(grads[1].shape(), Shape({4, 5}));
}

TEST(Conv2DErrors, ChannelMismatch) {
  std::string m = error_message<ShapeError>([] { ops::conv2d(zeros({8, 28, 28, 3}), zeros({3, 3, 1, 32})); });
  EXPECT_TRUE(contains(m, "[conv2d] input is [8,28,28,3], filter is [3,3,1,32]")) << m;
  EXPECT_TRUE(contains(m, "the filter expects 1 input channels but the input has 3")) << m;
}

TEST(Conv2DErrors, FilterMustBeRank4) {
  std::string m = error_message<ShapeError>([] { ops::conv2d(zeros({8, 28, 28, 3}), zeros({3, 3, 32})); });
  EXPECT_TRUE(contains(m, "[conv2d] filter is [3,3,32]")) << m;
  EXPECT_TRUE(contains(m, "rank 4 [kh, kw, in_channels, out_channels]")) << m;
}

TEST(Conv2DErrors, InputMustBeNHWC) {
  std::string m = error_message<ShapeError>([] { ops::conv2d(zeros({28, 28, 3}), zeros({3, 3, 3, 8})); });
  EXPECT_TRUE(contains(m, "[conv2d] input is [28,28,3]")) << m;
  EXPECT_TRUE(contains(m, "rank-4 NHWC")) << m;
}

TEST(Conv2DErrors, WindowLargerThanImageWithValidPadding) {
  std::string m = error_message<ShapeError>([] { ops::conv2d(zeros({1, 4, 4, 1}), zeros({5, 5, 1, 2})); });
  EXPECT_TRUE(contains(m, "[conv2d] input is [1,4,4,1], filter is [5,5,1,2]")) << m;
  EXPECT_TRUE(contains(m, "5x5 window does not fit in the 4x4 image with valid padding")) << m;
  EXPECT_EQ(ops::conv2d(zeros({1, 4, 4, 1}), zeros({5, 5, 1, 2}), {.padding = ops::Padding::same}).shape(),
            Shape({1, 4, 4, 2}));
}

TEST(Conv2DErrors, StridesMustBePositive) {
  std::string m = error_message<ValueError>([] {
    ops::conv2d(zeros({1, 4, 4, 1}), zeros({3, 3, 1, 2}), {.strides = {0, 1}});
  });
  EXPECT_TRUE(contains(m, "[conv2d] strides are {0, 1}")) << m;
}

TEST(Conv2DErrors, IntegerInputIsATypeError) {
  std::string m = error_message<TypeError>([] { ops::conv2d(zeros({1, 4, 4, 1}, DType::int32), zeros({3, 3, 1, 2})); });
  EXPECT_TRUE(contains(m, "[conv2d] input is int32[1,4,4,1], filter is float32[3,3,1,2]")) << m;
}

TEST(Conv2DErrors, BackpropInputChecksDy) {
  std::string m = error_message<ShapeError>([] {
    ops::conv2d_backprop_input(zeros({2, 4, 4, 8}), zeros({3, 3, 3, 8}), Shape{2, 7, 7, 3});
  });
  EXPECT_TRUE(contains(m, "[conv2d_backprop_input] dy is [2,4,4,8]")) << m;
  EXPECT_TRUE(contains(m, "gives [2,5,5,8]")) << m;
}

TEST(Conv2DErrors, BackpropFilterChecksFilterShape) {
  std::string m = error_message<ShapeError>([] {
    ops::conv2d_backprop_filter(zeros({2, 7, 7, 3}), zeros({2, 5, 5, 8}), Shape{3, 3, 4, 8});
  });
  EXPECT_TRUE(contains(m, "[conv2d_backprop_filter] input is [2,7,7,3], filter_shape is [3,3,4,8]")) << m;
  EXPECT_TRUE(contains(m, "expects 4 input channels but the input has 3")) << m;
}

TEST(PoolErrors, WindowLargerThanInputWithValidPadding) {
  std::string m = error_message<ShapeError>([] { ops::max_pool2d(zeros({1, 3, 3, 1}), {.pool_size = {4, 4}}); });
  EXPECT_TRUE(contains(m, "[max_pool2d] input is [1,3,3,1]")) << m;
  EXPECT_TRUE(contains(m, "4x4 pool window is larger than the 3x3 image with valid padding")) << m;
  EXPECT_EQ(ops::max_pool2d(zeros({1, 3, 3, 1}), {.pool_size = {4, 4}, .padding = ops::Padding::same}).shape(),
            Shape({1, 1, 1, 1}));
}

TEST(PoolErrors, AvgPoolNamesItself) {
  std::string m = error_message<ShapeError>([] { ops::avg_pool2d(zeros({4, 4, 1}), {}); });
  EXPECT_TRUE(contains(m, "[avg_pool2d] input is [4,4,1]")) << m;
  EXPECT_TRUE(contains(m, "rank-4 NHWC")) << m;
}

TEST(PoolErrors, NegativeStride) {
  std::string m = error_message<ValueError>([] { ops::avg_pool2d(zeros({1, 4, 4, 1}), {.strides = {-1, 1}}); });
  EXPECT_TRUE(contains(m, "[avg_pool2d] strides are {-1, 1}")) << m;
}

TEST(PoolErrors, ZeroPoolSize) {
  std::string m = error_message<ValueError>([] { ops::max_pool2d(zeros({1, 4, 4, 1}), {.pool_size = {0, 2}}); });
  EXPECT_TRUE(contains(m, "[max_pool2d] pool_size is {0, 2}")) << m;
}

TEST(PoolErrors, BackpropChecksDy) {
  std::string m = error_message<ShapeError>([] {
    ops::max_pool2d_backprop(zeros({1, 4, 4, 2}), zeros({1, 3, 3, 2}), {});
  });
  EXPECT_TRUE(contains(m, "[max_pool2d_backprop] dy is [1,3,3,2] but must be [1,2,2,2]")) << m;
}

TEST(PoolErrors, SelectChecksValues) {
  std::string m = error_message<ShapeError>([] {
    ops::max_pool2d_select(zeros({1, 4, 4, 2}), zeros({1, 4, 4, 3}), {});
  });
  EXPECT_TRUE(contains(m, "[max_pool2d_select] values is [1,4,4,3] but must be [1,4,4,2]")) << m;
}

TEST(PoolErrors, IntegerInputIsATypeError) {
  std::string m = error_message<TypeError>([] { ops::max_pool2d(zeros({1, 4, 4, 1}, DType::int64), {}); });
  EXPECT_TRUE(contains(m, "[max_pool2d] input is int64[1,4,4,1]")) << m;
}

}  // namespace
}  // namespace kestrel
