#include "framework/layers/global_pooling.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "framework/autodiff/gradcheck.h"
#include "framework/autodiff/gradient_tape.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/ops/ops.h"
#include "tests/framework/layers/compiled_layer_util.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;

// Two sequences of three steps and two channels.
Tensor two_sequences() {
  return Tensor::from_vector<float>({1, -2, 4, 0, -3, 5,  //
                                     0, 0, 6, -6, 3, 3},
                                    {2, 3, 2});
}

// One 2x2 image of two channels: channel 0 holds 1, 2, 3, 4 and channel 1 holds -1, -5, 0, -2.
Tensor image() { return Tensor::from_vector<float>({1, -1, 2, -5, 3, 0, 4, -2}, {1, 2, 2, 2}); }

TEST(GlobalPooling, ClassNamesDefaultNamesAndDefaults) {
  clear_session();
  layers::GlobalAveragePooling1D avg1;
  layers::GlobalMaxPooling1D max1;
  layers::GlobalAveragePooling2D avg2;
  layers::GlobalMaxPooling2D max2;
  EXPECT_EQ(avg1.class_name(), "GlobalAveragePooling1D");
  EXPECT_EQ(max1.class_name(), "GlobalMaxPooling1D");
  EXPECT_EQ(avg2.class_name(), "GlobalAveragePooling2D");
  EXPECT_EQ(max2.class_name(), "GlobalMaxPooling2D");
  EXPECT_EQ(avg1.name(), "global_average_pooling1d");
  EXPECT_EQ(max1.name(), "global_max_pooling1d");
  EXPECT_EQ(avg2.name(), "global_average_pooling2d");
  EXPECT_EQ(max2.name(), "global_max_pooling2d");
  for (const layers::GlobalPoolingOptions* o : {&avg1.options(), &max1.options(), &avg2.options(), &max2.options()})
    EXPECT_FALSE(o->keepdims);
  EXPECT_EQ(max2(image()).shape(), Shape({1, 2}));
  EXPECT_EQ(max2.count_params(), 0);
  EXPECT_TRUE(max2.weights().empty());
}

TEST(GlobalAveragePooling1D, MeansOverTheSteps) {
  layers::GlobalAveragePooling1D pool;
  const Tensor y = pool(two_sequences());
  EXPECT_EQ(y.shape(), Shape({2, 2}));
  const std::vector<float> v = y.to_vector<float>();
  EXPECT_FLOAT_EQ(v[0], 2.0f / 3.0f);
  EXPECT_FLOAT_EQ(v[1], 1.0f);
  EXPECT_FLOAT_EQ(v[2], 3.0f);
  EXPECT_FLOAT_EQ(v[3], -1.0f);
  layers::GlobalAveragePooling1D keep({.keepdims = true});
  EXPECT_EQ(keep(two_sequences()).shape(), Shape({2, 1, 2}));
  EXPECT_EQ(keep(Tensor::ones({4, 100, 64})).shape(), Shape({4, 1, 64}));
}

TEST(GlobalMaxPooling1D, TakesTheMaximumOverTheSteps) {
  layers::GlobalMaxPooling1D pool;
  EXPECT_EQ(pool(two_sequences()).shape(), Shape({2, 2}));
  EXPECT_EQ(pool(two_sequences()).to_vector<float>(), (std::vector<float>{4, 5, 6, 3}));
  layers::GlobalMaxPooling1D keep({.keepdims = true});
  const Tensor y = keep(two_sequences());
  EXPECT_EQ(y.shape(), Shape({2, 1, 2}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{4, 5, 6, 3}));
}

TEST(GlobalAveragePooling2D, MeansOverHeightAndWidth) {
  layers::GlobalAveragePooling2D gap;
  EXPECT_EQ(gap(image()).shape(), Shape({1, 2}));
  EXPECT_EQ(gap(image()).to_vector<float>(), (std::vector<float>{2.5f, -2.0f}));
  std::vector<float> ramp(16);
  for (int i = 0; i < 16; ++i) ramp[static_cast<std::size_t>(i)] = static_cast<float>(i);
  EXPECT_FLOAT_EQ(static_cast<float>(gap(Tensor::from_vector(ramp, {1, 4, 4, 1})).item()), 7.5f);
  EXPECT_EQ(gap(Tensor::ones({4, 7, 7, 64})).shape(), Shape({4, 64}));
  layers::GlobalAveragePooling2D keep({.keepdims = true});
  EXPECT_EQ(keep(Tensor::ones({4, 7, 7, 64})).shape(), Shape({4, 1, 1, 64}));
  EXPECT_EQ(keep(image()).to_vector<float>(), (std::vector<float>{2.5f, -2.0f}));
}

TEST(GlobalMaxPooling2D, TakesTheMaximumOverHeightAndWidth) {
  layers::GlobalMaxPooling2D gmp;
  EXPECT_EQ(gmp(image()).to_vector<float>(), (std::vector<float>{4, 0}));
  EXPECT_EQ(gmp(Tensor::ones({4, 7, 7, 64})).shape(), Shape({4, 64}));
  layers::GlobalMaxPooling2D keep({.keepdims = true});
  const Tensor y = keep(image());
  EXPECT_EQ(y.shape(), Shape({1, 1, 1, 2}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{4, 0}));
}

TEST(GlobalPooling, GradientsAndCompiledRuns) {
  const Tensor steps = random::normal({2, 5, 3}, random::Key(3));
  const Tensor images = random::normal({2, 3, 4, 3}, random::Key(4));
  layers::GlobalAveragePooling1D avg1;
  layers::GlobalMaxPooling1D max1;
  layers::GlobalAveragePooling2D avg2({.keepdims = true});
  layers::GlobalMaxPooling2D max2;
  const std::vector<std::pair<Layer*, Tensor>> runs = {
      {&avg1, steps}, {&max1, steps}, {&avg2, images}, {&max2, images}};
  for (const auto& run : runs) {
    Layer& layer = *run.first;
    GradcheckResult r = gradcheck([&](const std::vector<Tensor>& a) { return layer(a[0]); }, {run.second});
    EXPECT_TRUE(r.ok) << layer.class_name() << ": " << r.report;
    testing::expect_compiled_matches_eager(layer, run.second);
  }
}

TEST(GlobalPooling, MaximumGradientGoesToTheLargestStep) {
  layers::GlobalMaxPooling1D pool;
  const Tensor x = two_sequences();
  GradientTape tape;
  tape.watch(x);
  const Tensor g = tape.gradient(ops::sum(pool(x)), {x})[0];
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{0, 0, 1, 0, 0, 1,  //
                                                      0, 0, 1, 0, 0, 1}));
}

TEST(GlobalPooling, ComputesInTheBfloat16Policy) {
  const Tensor max = layers::GlobalMaxPooling1D({.dtype = "mixed_bfloat16"})(two_sequences());
  EXPECT_EQ(max.dtype(), DType::bfloat16);
  EXPECT_EQ(max.to_vector<float>(), (std::vector<float>{4, 5, 6, 3}));
  const Tensor mean = layers::GlobalAveragePooling2D({.dtype = "bfloat16"})(image());
  EXPECT_EQ(mean.dtype(), DType::bfloat16);
  EXPECT_EQ(mean.to_vector<float>(), (std::vector<float>{2.5f, -2.0f}));
}

TEST(GlobalPooling, ErrorsNameTheLayerAndTheFix) {
  clear_session();
  layers::GlobalAveragePooling1D avg1;
  std::string m = error_message<ShapeError>([&] { avg1(Tensor::ones({2, 7, 7, 3})); });
  EXPECT_TRUE(contains(m, "layer 'global_average_pooling1d' (GlobalAveragePooling1D): input is [2,7,7,3]")) << m;
  EXPECT_TRUE(contains(m, "takes sequences [batch, steps, channels]")) << m;
  EXPECT_TRUE(contains(m, "use GlobalAveragePooling2D")) << m;
  m = error_message<ShapeError>([] { layers::GlobalMaxPooling1D()(Tensor::ones({2, 3})); });
  EXPECT_TRUE(contains(m, "(GlobalMaxPooling1D): input is [2,3]")) << m;
  EXPECT_TRUE(contains(m, "expand_dims(x, -1)")) << m;

  m = error_message<ShapeError>([] { layers::GlobalAveragePooling2D()(Tensor::ones({2, 3})); });
  EXPECT_TRUE(contains(m, "(GlobalAveragePooling2D): input is [2,3]")) << m;
  EXPECT_TRUE(contains(m, "takes images [batch, height, width, channels]")) << m;
  m = error_message<ShapeError>([] { layers::GlobalMaxPooling2D()(Tensor::ones({2, 5, 3})); });
  EXPECT_TRUE(contains(m, "(GlobalMaxPooling2D): input is [2,5,3]")) << m;
  EXPECT_TRUE(contains(m, "use GlobalMaxPooling1D")) << m;
}

}  // namespace
}  // namespace kestrel
