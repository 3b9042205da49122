#include "framework/layers/zero_padding2d.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/autodiff/gradcheck.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "tests/framework/layers/compiled_layer_util.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;

// One 2x2 single-channel image holding 1, 2 / 3, 4.
Tensor one_to_four() { return Tensor::from_vector<float>({1, 2, 3, 4}, {1, 2, 2, 1}); }

TEST(ZeroPadding2D, DefaultsToOneZeroOnEverySide) {
  clear_session();
  layers::ZeroPadding2D pad;
  EXPECT_EQ(pad.class_name(), "ZeroPadding2D");
  EXPECT_EQ(pad.name(), "zero_padding2d");
  const layers::Padding2DArg& p = pad.options().padding;
  EXPECT_EQ(p.top(), 1);
  EXPECT_EQ(p.bottom(), 1);
  EXPECT_EQ(p.left(), 1);
  EXPECT_EQ(p.right(), 1);
  const Tensor y = pad(one_to_four());
  EXPECT_EQ(y.shape(), Shape({1, 4, 4, 1}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 0, 0, 0,  //
                                                      0, 1, 2, 0,  //
                                                      0, 3, 4, 0,  //
                                                      0, 0, 0, 0}));
  EXPECT_EQ(pad(Tensor::ones({2, 28, 28, 3})).shape(), Shape({2, 30, 30, 3}));
  EXPECT_EQ(pad.count_params(), 0);
}

TEST(ZeroPadding2D, TakesKerasThreeForms) {
  layers::ZeroPadding2D every_side({.padding = 2});
  EXPECT_EQ(every_side(Tensor::ones({1, 3, 4, 2})).shape(), Shape({1, 7, 8, 2}));

  // {height, width}: 2 rows above and below, 1 column left and right.
  layers::ZeroPadding2D per_axis({.padding = {2, 1}});
  const Tensor seven = Tensor::full({1, 1, 1, 1}, 7.0);
  const Tensor y = per_axis(seven);
  EXPECT_EQ(y.shape(), Shape({1, 5, 3, 1}));
  std::vector<float> want(15, 0.0f);
  want[2 * 3 + 1] = 7;
  EXPECT_EQ(y.to_vector<float>(), want);

  // {{top, bottom}, {left, right}}.
  layers::ZeroPadding2D exact({.padding = {{0, 1}, {2, 3}}});
  EXPECT_EQ(exact.options().padding.to_string(), "{{0, 1}, {2, 3}}");
  const Tensor z = exact(one_to_four());
  EXPECT_EQ(z.shape(), Shape({1, 3, 7, 1}));
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{0, 0, 1, 2, 0, 0, 0,  //
                                                      0, 0, 3, 4, 0, 0, 0,  //
                                                      0, 0, 0, 0, 0, 0, 0}));

  layers::ZeroPadding2D none({.padding = 0});
  EXPECT_EQ(none(one_to_four()).to_vector<float>(), one_to_four().to_vector<float>());
}

TEST(ZeroPadding2D, PadsEveryChannelOfEveryImage) {
  const Tensor x = random::normal({2, 2, 3, 4}, random::Key(1));
  layers::ZeroPadding2D pad({.padding = {{1, 0}, {0, 2}}});
  const Tensor y = pad(x);
  ASSERT_EQ(y.shape(), Shape({2, 3, 5, 4}));
  const std::vector<float> in = x.to_vector<float>(), out = y.to_vector<float>();
  for (int n = 0; n < 2; ++n)
    for (int h = 0; h < 3; ++h)
      for (int w = 0; w < 5; ++w)
        for (int c = 0; c < 4; ++c) {
          const bool inside = h >= 1 && w < 3;
          const float want = inside ? in[static_cast<std::size_t>(((n * 2 + h - 1) * 3 + w) * 4 + c)] : 0.0f;
          EXPECT_EQ(out[static_cast<std::size_t>(((n * 3 + h) * 5 + w) * 4 + c)], want);
        }
}

TEST(ZeroPadding2D, GradientsAndCompiledRun) {
  layers::ZeroPadding2D pad({.padding = {{1, 2}, {0, 1}}});
  const Tensor x = random::normal({2, 3, 2, 2}, random::Key(0));
  GradcheckResult r = gradcheck([&](const std::vector<Tensor>& a) { return pad(a[0]); }, {x});
  EXPECT_TRUE(r.ok) << r.report;
  EXPECT_TRUE(pad.weights().empty());
  testing::expect_compiled_matches_eager(pad, x);
}

TEST(ZeroPadding2D, ComputesInTheBfloat16Policy) {
  const Tensor y = layers::ZeroPadding2D({.dtype = "mixed_bfloat16"})(one_to_four());
  EXPECT_EQ(y.dtype(), DType::bfloat16);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0, 0, 0, 0}));
}

TEST(ZeroPadding2D, ErrorsNameTheLayerAndTheFix) {
  clear_session();
  std::string m = error_message<ValueError>([] { layers::ZeroPadding2D({.padding = {{-1, 0}, {0, 0}}}); });
  EXPECT_TRUE(contains(m, "layer 'zero_padding2d' (ZeroPadding2D): padding is {{-1, 0}, {0, 0}}")) << m;
  EXPECT_TRUE(contains(m, "each side must be 0 or more")) << m;
  EXPECT_THROW(layers::ZeroPadding2D({.padding = -2}), ValueError);

  layers::ZeroPadding2D pad;
  m = error_message<ShapeError>([&] { pad(Tensor::ones({2, 28, 28})); });
  EXPECT_TRUE(contains(m, "(ZeroPadding2D): input is [2,28,28]")) << m;
  EXPECT_TRUE(contains(m, "takes images [batch, height, width, channels]")) << m;
  EXPECT_TRUE(contains(m, "expand_dims(x, -1)")) << m;
}

}  // namespace
}  // namespace kestrel
