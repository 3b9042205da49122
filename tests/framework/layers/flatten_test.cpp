#include "framework/layers/flatten.h"

#include <gtest/gtest.h>

#include "framework/autodiff/gradcheck.h"
#include "framework/core/error.h"
#include "framework/core/random.h"

namespace kestrel {
namespace {

TEST(Flatten, KeepsTheBatchDim) {
  layers::Flatten flatten;
  EXPECT_EQ(flatten(Tensor::ones({128, 5, 5, 64})).shape(), Shape({128, 1600}));
  EXPECT_EQ(flatten(Tensor::ones({8})).shape(), Shape({8, 1}));
  EXPECT_EQ(flatten(Tensor::ones({0, 3, 2})).shape(), Shape({0, 6}));
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {1, 2, 3});
  EXPECT_EQ(flatten(x).to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(flatten.class_name(), "Flatten");
  EXPECT_EQ(flatten.count_params(), 0);
}

TEST(Flatten, GradientIsAReshape) {
  layers::Flatten flatten;
  GradcheckResult r = gradcheck([&](const std::vector<Tensor>& a) { return flatten(a[0]); },
                                {random::normal({2, 3, 2}, random::Key(0))});
  EXPECT_TRUE(r.ok) << r.report;
}

TEST(Flatten, RejectsAScalar) { EXPECT_THROW(layers::Flatten()(Tensor::scalar(1.0)), ShapeError); }

}  // namespace
}  // namespace kestrel
