#include "framework/layers/reshape.h"

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

// [2, 12] holding 0..23.
Tensor two_rows() {
  std::vector<float> v(24);
  for (int i = 0; i < 24; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i);
  return Tensor::from_vector(v, {2, 12});
}

TEST(Reshape, KeepsTheBatchDimAndTheOrderOfValues) {
  clear_session();
  layers::Reshape reshape({3, 4});
  EXPECT_EQ(reshape.class_name(), "Reshape");
  EXPECT_EQ(reshape.name(), "reshape");
  EXPECT_EQ(reshape.target_shape(), (std::vector<std::int64_t>{3, 4}));
  const Tensor y = reshape(two_rows());
  EXPECT_EQ(y.shape(), Shape({2, 3, 4}));
  EXPECT_EQ(y.to_vector<float>(), two_rows().to_vector<float>());
  EXPECT_EQ(reshape.count_params(), 0);
  EXPECT_EQ(layers::Reshape({28, 28, 1})(Tensor::ones({5, 784})).shape(), Shape({5, 28, 28, 1}));
  EXPECT_EQ(layers::Reshape({12})(Tensor::ones({2, 3, 4})).shape(), Shape({2, 12}));
}

TEST(Reshape, InfersTheMinusOneEntry) {
  EXPECT_EQ(layers::Reshape({-1, 2})(two_rows()).shape(), Shape({2, 6, 2}));
  EXPECT_EQ(layers::Reshape({2, -1, 3})(Tensor::ones({2, 3, 4})).shape(), Shape({2, 2, 2, 3}));
  EXPECT_EQ(layers::Reshape({-1})(Tensor::ones({4, 2, 3})).shape(), Shape({4, 6}));
  // The batch dim comes from the input, so an empty batch reshapes too.
  EXPECT_EQ(layers::Reshape({3, -1})(Tensor::ones({0, 12})).shape(), Shape({0, 3, 4}));
}

TEST(Reshape, GradientsAndCompiledRun) {
  layers::Reshape reshape({-1, 3});
  const Tensor x = random::normal({2, 3, 2}, random::Key(0));
  GradcheckResult r = gradcheck([&](const std::vector<Tensor>& a) { return reshape(a[0]); }, {x});
  EXPECT_TRUE(r.ok) << r.report;
  EXPECT_TRUE(reshape.weights().empty());
  testing::expect_compiled_matches_eager(reshape, x);
}

TEST(Reshape, ComputesInTheBfloat16Policy) {
  const Tensor y = layers::Reshape({4, 3}, {.dtype = "mixed_bfloat16"})(two_rows());
  EXPECT_EQ(y.dtype(), DType::bfloat16);
  EXPECT_EQ(y.shape(), Shape({2, 4, 3}));
  EXPECT_EQ(y.to_vector<float>(), two_rows().to_vector<float>());
}

TEST(Reshape, ASizeMismatchNamesTheLayerBothShapesAndTheFix) {
  clear_session();
  layers::Reshape reshape({5, 2});
  std::string m = error_message<ShapeError>([&] { reshape(two_rows()); });
  EXPECT_TRUE(contains(m, "layer 'reshape' (Reshape): cannot reshape input [2,12] to target_shape [5,2]")) << m;
  EXPECT_TRUE(contains(m, "a sample [12] holds 12 values and the target 10")) << m;
  EXPECT_TRUE(contains(m, "choose a target_shape whose sizes multiply to 12, or put -1 in one place")) << m;

  m = error_message<ShapeError>([] { layers::Reshape({5, -1})(Tensor::ones({2, 3, 4})); });
  EXPECT_TRUE(contains(m, "cannot reshape input [2,3,4] to target_shape [5,-1]")) << m;
  EXPECT_TRUE(contains(m, "a sample [3,4] holds 12 values, not a multiple of 5")) << m;
  EXPECT_TRUE(contains(m, "choose sizes whose product divides 12")) << m;

  m = error_message<ShapeError>([] { layers::Reshape({1})(Tensor::scalar(1.0)); });
  EXPECT_TRUE(contains(m, "(Reshape): input is a scalar")) << m;
}

TEST(Reshape, BadTargetShapesAreValueErrors) {
  for (const std::vector<std::int64_t>& target :
       std::vector<std::vector<std::int64_t>>{{-1, -1}, {3, 0}, {-2, 4}, {1, 1, 1, 1, 1, 1, 1, 1}}) {
    const std::string m = error_message<ValueError>([&] { layers::Reshape reshape(target); });
    EXPECT_TRUE(contains(m, "(Reshape): target_shape is " + dims_to_string(target))) << m;
  }
  const std::string m = error_message<ValueError>([] { layers::Reshape({-1, -1}); });
  EXPECT_TRUE(contains(m, "each entry must be positive, except one -1")) << m;
}

}  // namespace
}  // namespace kestrel
