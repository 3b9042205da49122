#include "framework/layers/pooling.h"

#include <gtest/gtest.h>

#include "framework/autodiff/gradcheck.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;

// One image [1,4,4,1] holding 0..15 row by row.
Tensor ramp() {
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i);
  return Tensor::from_vector(v, {1, 4, 4, 1});
}

TEST(MaxPooling2D, DefaultsToTwoByTwoWindowsWithStrideTwo) {
  layers::MaxPooling2D pool;
  EXPECT_EQ(pool.class_name(), "MaxPooling2D");
  EXPECT_EQ(pool(Tensor::ones({3, 26, 26, 32})).shape(), Shape({3, 13, 13, 32}));
  EXPECT_EQ(pool(ramp()).to_vector<float>(), (std::vector<float>{5, 7, 13, 15}));
  layers::MaxPooling2D same({.pool_size = {3, 3}, .strides = {1, 1}, .padding = "same"});
  EXPECT_EQ(same(Tensor::ones({1, 7, 7, 2})).shape(), Shape({1, 7, 7, 2}));
  EXPECT_EQ(pool.count_params(), 0);
}

TEST(AveragePooling2D, AveragesWindows) {
  layers::AveragePooling2D pool;
  EXPECT_EQ(pool.class_name(), "AveragePooling2D");
  EXPECT_EQ(pool(ramp()).to_vector<float>(), (std::vector<float>{2.5f, 4.5f, 10.5f, 12.5f}));
  layers::AveragePooling2D strided({.pool_size = {2, 2}, .strides = {1, 1}});
  EXPECT_EQ(strided(ramp()).shape(), Shape({1, 3, 3, 1}));
}

TEST(Pooling, Gradients) {
  Tensor x = random::normal({1, 4, 4, 2}, random::Key(3));
  layers::MaxPooling2D max_pool;
  layers::AveragePooling2D avg_pool({.pool_size = {3, 3}, .strides = {1, 1}, .padding = "same"});
  for (Layer* layer : std::vector<Layer*>{&max_pool, &avg_pool}) {
    GradcheckResult r = gradcheck([&](const std::vector<Tensor>& a) { return (*layer)(a[0]); }, {x});
    EXPECT_TRUE(r.ok) << layer->class_name() << ": " << r.report;
  }
}

TEST(Pooling, ErrorsNameTheLayer) {
  clear_session();
  layers::MaxPooling2D pool;
  std::string m = error_message<ShapeError>([&] { pool(Tensor::ones({2, 28, 28})); });
  EXPECT_TRUE(contains(m, "layer 'max_pooling2d' (MaxPooling2D)")) << m;
  EXPECT_TRUE(contains(m, "expand_dims(x, -1)")) << m;
  layers::AveragePooling2D big({.pool_size = {5, 5}});
  m = error_message<ShapeError>([&] { big(Tensor::ones({1, 3, 3, 1})); });
  EXPECT_TRUE(contains(m, "(AveragePooling2D)")) << m;
  EXPECT_THROW(layers::MaxPooling2D({.pool_size = {0, 2}}), ValueError);
  EXPECT_THROW(layers::MaxPooling2D({.strides = {-1, 1}}), ValueError);
}

}  // namespace
}  // namespace kestrel
