#include "framework/layers/permute.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/autodiff/gradcheck.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "tests/framework/layers/compiled_layer_util.h"
#include "tests/support/counting.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::counting;
using testing::error_message;

TEST(Permute, SwapsTheAxesAfterTheBatchDim) {
  clear_session();
  layers::Permute permute({2, 1});
  EXPECT_EQ(permute.class_name(), "Permute");
  EXPECT_EQ(permute.name(), "permute");
  EXPECT_EQ(permute.dims(), (std::vector<int>{2, 1}));
  // [[0, 1, 2], [3, 4, 5]] becomes [[0, 3], [1, 4], [2, 5]].
  const Tensor y = permute(counting({1, 2, 3}));
  EXPECT_EQ(y.shape(), Shape({1, 3, 2}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(permute(Tensor::ones({8, 10, 64})).shape(), Shape({8, 64, 10}));
  EXPECT_EQ(permute.count_params(), 0);
}

TEST(Permute, ChannelsFirstToChannelsLast) {
  layers::Permute to_channels_last({2, 3, 1});
  const Tensor x = counting({2, 2, 3, 4});  // [N, C, H, W]
  const Tensor y = to_channels_last(x);
  ASSERT_EQ(y.shape(), Shape({2, 3, 4, 2}));
  const std::vector<float> in = x.to_vector<float>(), out = y.to_vector<float>();
  for (int n = 0; n < 2; ++n)
    for (int h = 0; h < 3; ++h)
      for (int w = 0; w < 4; ++w)
        for (int c = 0; c < 2; ++c) {
          EXPECT_EQ(out[static_cast<std::size_t>(((n * 3 + h) * 4 + w) * 2 + c)],
                    in[static_cast<std::size_t>(((n * 2 + c) * 3 + h) * 4 + w)]);
        }
  // The identity permutation changes nothing.
  EXPECT_EQ(layers::Permute({1, 2, 3})(x).to_vector<float>(), in);
}

TEST(Permute, GradientsAndCompiledRun) {
  layers::Permute permute({3, 1, 2});
  const Tensor x = random::normal({2, 3, 2, 4}, random::Key(0));
  GradcheckResult r = gradcheck([&](const std::vector<Tensor>& a) { return permute(a[0]); }, {x});
  EXPECT_TRUE(r.ok) << r.report;
  EXPECT_TRUE(permute.weights().empty());
  testing::expect_compiled_matches_eager(permute, x);
}

TEST(Permute, ComputesInTheBfloat16Policy) {
  const Tensor y = layers::Permute({2, 1}, {.dtype = "mixed_bfloat16"})(counting({1, 2, 3}));
  EXPECT_EQ(y.dtype(), DType::bfloat16);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST(Permute, ErrorsNameTheLayerAndTheFix) {
  clear_session();
  for (const std::vector<int>& dims : std::vector<std::vector<int>>{{1, 3}, {0, 1}, {2, 2}, {}}) {
    const std::string m = error_message<ValueError>([&] { layers::Permute permute(dims); });
    EXPECT_TRUE(contains(m, "(Permute): dims are {")) << m;
    EXPECT_TRUE(contains(m, "counted from 1, as in Keras")) << m;
  }
  std::string m = error_message<ValueError>([] { layers::Permute({1, 3}); });
  EXPECT_TRUE(contains(m, "dims are {1, 3}; they must hold each of 1..2 once")) << m;

  clear_session();  // the layers above that threw took names too
  layers::Permute permute({2, 1});
  m = error_message<ShapeError>([&] { permute(Tensor::ones({2, 3, 4, 5})); });
  EXPECT_TRUE(contains(m, "layer 'permute' (Permute): input is [2,3,4,5] but dims {2, 1} reorder 2 axes")) << m;
  EXPECT_TRUE(contains(m, "feed inputs of rank 3, or give dims a permutation of 1..3")) << m;
}

}  // namespace
}  // namespace kestrel
