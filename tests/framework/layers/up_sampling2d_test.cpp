#include "framework/layers/up_sampling2d.h"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "framework/autodiff/gradcheck.h"
#include "framework/autodiff/gradient_tape.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/ops/ops.h"
#include "tests/framework/layers/compiled_layer_util.h"
#include "tests/support/counting.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::counting;
using testing::error_message;

TEST(UpSampling2D, DefaultsToTwoByTwoNearest) {
  clear_session();
  layers::UpSampling2D up;
  EXPECT_EQ(up.class_name(), "UpSampling2D");
  EXPECT_EQ(up.name(), "up_sampling2d");
  EXPECT_EQ(up.options().size, (std::array<int, 2>{2, 2}));
  EXPECT_EQ(up.options().interpolation, "nearest");
  const Tensor y = up(Tensor::from_vector<float>({1, 2, 3, 4}, {1, 2, 2, 1}));
  EXPECT_EQ(y.shape(), Shape({1, 4, 4, 1}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 1, 2, 2,  //
                                                      1, 1, 2, 2,  //
                                                      3, 3, 4, 4,  //
                                                      3, 3, 4, 4}));
  EXPECT_EQ(up(Tensor::ones({3, 14, 14, 8})).shape(), Shape({3, 28, 28, 8}));
  EXPECT_EQ(up.count_params(), 0);
}

TEST(UpSampling2D, RepeatsRowsAndColumnsByTheirOwnFactors) {
  // Keras's docstring example: size (1, 2) on arange(12) shaped (2, 2, 1, 3).
  layers::UpSampling2D wide({.size = {1, 2}});
  const Tensor y = wide(counting({2, 2, 1, 3}));
  EXPECT_EQ(y.shape(), Shape({2, 2, 2, 3}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 1, 2, 0, 1, 2, 3, 4,  5,  3, 4,  5,  //
                                                      6, 7, 8, 6, 7, 8, 9, 10, 11, 9, 10, 11}));
  layers::UpSampling2D tall({.size = {3, 1}});
  const Tensor z = tall(counting({1, 2, 2, 1}));
  EXPECT_EQ(z.shape(), Shape({1, 6, 2, 1}));
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3}));
  layers::UpSampling2D same({.size = {1, 1}});
  EXPECT_EQ(same(counting({1, 2, 3, 2})).to_vector<float>(), counting({1, 2, 3, 2}).to_vector<float>());
}

TEST(UpSampling2D, GradientsAndCompiledRun) {
  layers::UpSampling2D up({.size = {2, 3}});
  const Tensor x = random::normal({2, 2, 3, 2}, random::Key(0));
  GradcheckResult r = gradcheck([&](const std::vector<Tensor>& a) { return up(a[0]); }, {x});
  EXPECT_TRUE(r.ok) << r.report;
  EXPECT_TRUE(up.weights().empty());
  testing::expect_compiled_matches_eager(up, x);
  // Each pixel feeds a 2 x 3 block, so the gradient of the sum is 6 everywhere.
  GradientTape tape;
  tape.watch(x);
  const Tensor g = tape.gradient(ops::sum(up(x)), {x})[0];
  EXPECT_EQ(g.to_vector<float>(), std::vector<float>(24, 6.0f));
}

TEST(UpSampling2D, ComputesInTheBfloat16Policy) {
  const Tensor y = layers::UpSampling2D({.size = {1, 2}, .dtype = "mixed_bfloat16"})(counting({1, 1, 2, 1}));
  EXPECT_EQ(y.dtype(), DType::bfloat16);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 0, 1, 1}));
}

TEST(UpSampling2D, ErrorsNameTheLayerAndTheFix) {
  clear_session();
  std::string m = error_message<ValueError>([] { layers::UpSampling2D({.interpolation = "bilinear"}); });
  EXPECT_TRUE(contains(m, "layer 'up_sampling2d' (UpSampling2D): interpolation \"bilinear\" is not supported")) << m;
  EXPECT_TRUE(contains(m, "the supported interpolations are: \"nearest\"")) << m;
  m = error_message<ValueError>([] { layers::UpSampling2D({.interpolation = "cubic"}); });
  EXPECT_TRUE(contains(m, "interpolation \"cubic\" is unknown; the supported interpolations are: \"nearest\"")) << m;
  m = error_message<ValueError>([] { layers::UpSampling2D({.size = {0, 2}}); });
  EXPECT_TRUE(contains(m, "(UpSampling2D): size is {0, 2}; both factors must be positive")) << m;

  layers::UpSampling2D up;
  m = error_message<ShapeError>([&] { up(Tensor::ones({2, 28, 28})); });
  EXPECT_TRUE(contains(m, "(UpSampling2D): input is [2,28,28]")) << m;
  EXPECT_TRUE(contains(m, "expand_dims(x, -1)")) << m;
}

}  // namespace
}  // namespace kestrel
