#include "framework/layers/conv2d.h"

#include <gtest/gtest.h>

#include "framework/autodiff/gradcheck.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/ops/ops.h"
#include "tests/framework/layers/layer_test_util.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;

TEST(Conv2D, ValidAndSameOutputShapes) {
  Tensor images = Tensor::ones({2, 28, 28, 1});
  layers::Conv2D valid(32, {3, 3});
  EXPECT_EQ(valid(images).shape(), Shape({2, 26, 26, 32}));
  layers::Conv2D same(8, {3, 3}, {.padding = "same"});
  EXPECT_EQ(same(images).shape(), Shape({2, 28, 28, 8}));
  layers::Conv2D strided_same(8, {3, 3}, {.strides = {2, 2}, .padding = ops::Padding::same});
  EXPECT_EQ(strided_same(images).shape(), Shape({2, 14, 14, 8}));
  layers::Conv2D strided_valid(8, {3, 3}, {.strides = {2, 2}});
  EXPECT_EQ(strided_valid(images).shape(), Shape({2, 13, 13, 8}));
  layers::Conv2D wide(4, {1, 5}, {.padding = "valid"});
  EXPECT_EQ(wide(images).shape(), Shape({2, 28, 24, 4}));
}

TEST(Conv2D, WeightsFollowKeras) {
  clear_session();
  layers::Conv2D conv(64, {3, 3});
  conv(Tensor::ones({1, 8, 8, 32}));
  std::vector<Variable> w = conv.weights();
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].name(), "conv2d/kernel");
  EXPECT_EQ(w[0].shape(), Shape({3, 3, 32, 64}));
  EXPECT_EQ(w[1].name(), "conv2d/bias");
  EXPECT_EQ(w[1].shape(), Shape({64}));
  EXPECT_EQ(conv.count_params(), 3 * 3 * 32 * 64 + 64);
  EXPECT_EQ(conv.class_name(), "Conv2D");
}

TEST(Conv2D, OneByOneConvolutionIsADenseOverChannels) {
  layers::Conv2D conv(2, {1, 1}, {.activation = "relu", .bias_initializer = "ones"});
  Tensor x = random::normal({1, 2, 2, 3}, random::Key(0));
  std::vector<float> y = conv(x).to_vector<float>();
  Tensor k = ops::reshape(conv.kernel().value(), {3, 2});
  std::vector<float> ref =
      ops::relu(ops::add(ops::matmul(ops::reshape(x, {4, 3}), k), Tensor::ones({2}))).to_vector<float>();
  ASSERT_EQ(y.size(), ref.size());
  for (std::size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], ref[i], 1e-5);
}

TEST(Conv2D, Gradients) {
  layers::Conv2D conv(3, {3, 3}, {.strides = {2, 2}, .padding = "same", .activation = "tanh"});
  Tensor x = random::normal({1, 5, 5, 2}, random::Key(1));
  conv(x);
  conv.bias().assign(random::normal({3}, random::Key(2)));
  GradcheckResult r = gradcheck([&](const std::vector<Tensor>& a) { return conv(a[0]); }, {x});
  EXPECT_TRUE(r.ok) << r.report;
  GradcheckResult w = testing::weight_gradcheck([&] { return conv(x); }, conv.weights());
  EXPECT_TRUE(w.ok) << w.report;
}

TEST(Conv2D, ErrorsNameTheLayerAndTheFix) {
  clear_session();
  layers::Conv2D conv(4, {3, 3});
  std::string m = error_message<ShapeError>([&] { conv(Tensor::ones({2, 28, 28})); });
  EXPECT_TRUE(contains(m, "layer 'conv2d' (Conv2D)")) << m;
  EXPECT_TRUE(contains(m, "[2,28,28]")) << m;
  EXPECT_TRUE(contains(m, "expand_dims(x, -1)")) << m;

  conv(Tensor::ones({1, 6, 6, 3}));
  m = error_message<ShapeError>([&] { conv(Tensor::ones({1, 6, 6, 4})); });
  EXPECT_TRUE(contains(m, "[1,6,6,4]")) << m;
  EXPECT_TRUE(contains(m, "[3,3,3,4]")) << m;

  m = error_message<ShapeError>([&] { conv(Tensor::ones({1, 2, 2, 3})); });  // window larger than the image
  EXPECT_TRUE(contains(m, "layer 'conv2d' (Conv2D)")) << m;
  EXPECT_TRUE(contains(m, "[conv2d]")) << m;

  m = error_message<ValueError>([] { layers::Conv2D(4, {3, 3}, {.padding = "full"}); });
  EXPECT_TRUE(contains(m, "\"valid\" or \"same\"")) << m;
  EXPECT_THROW(layers::Conv2D(0, {3, 3}), ValueError);
  EXPECT_THROW(layers::Conv2D(4, {3, 3}, {.strides = {0, 1}}), ValueError);
}

}  // namespace
}  // namespace kestrel
