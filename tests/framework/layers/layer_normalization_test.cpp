#include "framework/layers/layer_normalization.h"

#include <gtest/gtest.h>

#include <cmath>

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

TEST(LayerNormalization, NormalizesTheLastAxis) {
  layers::LayerNormalization norm;
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 10, 10, 10, 14}, {2, 4});
  std::vector<float> y = norm(x).to_vector<float>();
  // Row 0: mean 2.5, variance 1.25; Keras's epsilon is 1e-3.
  double s = std::sqrt(1.25 + 1e-3);
  EXPECT_NEAR(y[0], (1 - 2.5) / s, 1e-5);
  EXPECT_NEAR(y[3], (4 - 2.5) / s, 1e-5);
  double row1 = 0;
  for (int i = 4; i < 8; ++i) row1 += y[static_cast<std::size_t>(i)];
  EXPECT_NEAR(row1, 0.0, 1e-5);
}

TEST(LayerNormalization, WeightsAreGammaThenBeta) {
  clear_session();
  layers::LayerNormalization norm({.epsilon = 1e-12});
  norm(Tensor::ones({2, 3, 8}));
  std::vector<Variable> w = norm.weights();
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].name(), "layer_normalization/gamma");
  EXPECT_EQ(w[1].name(), "layer_normalization/beta");
  EXPECT_EQ(w[0].value().to_vector<float>(), std::vector<float>(8, 1.0f));
  EXPECT_EQ(w[1].value().to_vector<float>(), std::vector<float>(8, 0.0f));
  EXPECT_EQ(norm.class_name(), "LayerNormalization");
}

TEST(LayerNormalization, CenterAndScaleCanBeTurnedOff) {
  layers::LayerNormalization plain({.center = false, .scale = false});
  Tensor x = random::normal({3, 5}, random::Key(1));
  Tensor y = plain(x);
  EXPECT_EQ(plain.weights().size(), 0u);
  layers::LayerNormalization reference;
  std::vector<float> a = y.to_vector<float>();
  std::vector<float> b = reference(x).to_vector<float>();
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6);

  layers::LayerNormalization scale_only({.center = false});
  scale_only(x);
  ASSERT_EQ(scale_only.weights().size(), 1u);
  EXPECT_TRUE(scale_only.gamma().defined());
  EXPECT_FALSE(scale_only.beta().defined());
}

TEST(LayerNormalization, Gradients) {
  layers::LayerNormalization norm;
  Tensor x = random::normal({2, 3, 4}, random::Key(2));
  norm(x);
  norm.gamma().assign(random::normal({4}, random::Key(3)));
  norm.beta().assign(random::normal({4}, random::Key(4)));
  GradcheckResult r = gradcheck([&](const std::vector<Tensor>& a) { return norm(a[0]); }, {x});
  EXPECT_TRUE(r.ok) << r.report;
  GradcheckResult w = testing::weight_gradcheck([&] { return norm(x); }, norm.weights());
  EXPECT_TRUE(w.ok) << w.report;
}

TEST(LayerNormalization, ErrorsNameTheLayer) {
  clear_session();
  layers::LayerNormalization norm;
  norm(Tensor::ones({2, 4}));
  std::string m = error_message<ShapeError>([&] { norm(Tensor::ones({2, 5})); });
  EXPECT_TRUE(contains(m, "layer 'layer_normalization' (LayerNormalization)")) << m;
  EXPECT_TRUE(contains(m, "[2,5]")) << m;
  m = error_message<ValueError>([] { layers::LayerNormalization({.epsilon = 0}); });
  EXPECT_TRUE(contains(m, "epsilon")) << m;
}

}  // namespace
}  // namespace kestrel
