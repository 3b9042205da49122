#include "framework/layers/activations.h"

#include <gtest/gtest.h>

#include <cmath>

#include "framework/core/error.h"
#include "framework/layers/activation.h"
#include "framework/ops/ops.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;

TEST(Activations, EachNameComputesItsFunction) {
  Tensor x = Tensor::from_vector<float>({-1.0f, 0.5f, 2.0f}, {1, 3});
  std::vector<float> v = x.to_vector<float>();
  auto apply = [&](const char* name) { return ActivationFn(name)(x).to_vector<float>(); };

  EXPECT_EQ(apply("linear"), v);
  EXPECT_EQ(apply(""), v);
  EXPECT_EQ(apply("relu"), (std::vector<float>{0.0f, 0.5f, 2.0f}));
  double z = std::exp(-1.0) + std::exp(0.5) + std::exp(2.0);
  for (std::size_t i = 0; i < v.size(); ++i) {
    double xi = v[i];
    EXPECT_NEAR(apply("sigmoid")[i], 1 / (1 + std::exp(-xi)), 1e-6);
    EXPECT_NEAR(apply("tanh")[i], std::tanh(xi), 1e-6);
    EXPECT_NEAR(apply("exponential")[i], std::exp(xi), 1e-5);
    EXPECT_NEAR(apply("gelu")[i], 0.5 * xi * (1 + std::erf(xi / std::sqrt(2.0))), 1e-6);
    EXPECT_NEAR(apply("softmax")[i], std::exp(xi) / z, 1e-6);
    EXPECT_NEAR(apply("log_softmax")[i], xi - std::log(z), 1e-5);
  }
}

TEST(Activations, LinearAddsNoOp) {
  ActivationFn linear;
  EXPECT_TRUE(linear.is_linear());
  EXPECT_EQ(linear.name(), "linear");
  Tensor x = Tensor::ones({2});
  EXPECT_TRUE(linear(x).is_same(x));
  EXPECT_FALSE(ActivationFn("relu").is_linear());
}

TEST(Activations, UnknownNameListsTheKnownOnes) {
  std::string m = error_message<ValueError>([] { ActivationFn f = "relux"; });
  EXPECT_TRUE(contains(m, "'relux'")) << m;
  for (const std::string& name : activations::names()) EXPECT_TRUE(contains(m, name)) << m;
}

TEST(Activations, CustomFunctionKeepsItsName) {
  ActivationFn swish("swish", [](const Tensor& x) { return ops::multiply(x, ops::sigmoid(x)); });
  EXPECT_EQ(swish.name(), "swish");
  EXPECT_NEAR(swish(Tensor::scalar(1.0)).item(), 1.0 / (1.0 + std::exp(-1.0)), 1e-6);
}

TEST(ActivationLayer, AppliesTheNamedFunction) {
  clear_session();
  layers::Activation relu("relu");
  EXPECT_EQ(relu.name(), "activation");
  EXPECT_EQ(relu.class_name(), "Activation");
  Tensor y = relu(Tensor::from_vector<float>({-2.0f, 3.0f}, {1, 2}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0.0f, 3.0f}));
  EXPECT_EQ(relu.count_params(), 0);
}

}  // namespace
}  // namespace kestrel
