// Adam and AdamW against Keras's update rules, computed by hand in double.
#include "framework/optimizers/adam.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "framework/core/error.h"
#include "framework/optimizers/adamw.h"
#include "tests/framework/optimizers/optimizer_test_util.h"
#include "tests/support/error_message.h"

namespace kestrel::optimizers {
namespace {

using kestrel::testing::contains;
using kestrel::testing::error_message;
using testing::expect_values;
using testing::gradient;
using testing::make_variable;

// Adam in double, line for line with Keras's update_step.
struct AdamReference {
  double lr, beta_1, beta_2, epsilon, weight_decay = 0.0;
  bool amsgrad = false;
  std::vector<double> var, m, v, v_hat;
  int iterations = 0;

  void step(const std::vector<double>& g) {
    const double t = iterations + 1;
    const double alpha = lr * std::sqrt(1 - std::pow(beta_2, t)) / (1 - std::pow(beta_1, t));
    for (std::size_t i = 0; i < var.size(); ++i) {
      var[i] -= var[i] * weight_decay * lr;  // decoupled decay comes first
      m[i] += (g[i] - m[i]) * (1 - beta_1);
      v[i] += (g[i] * g[i] - v[i]) * (1 - beta_2);
      double denominator_v = v[i];
      if (amsgrad) denominator_v = v_hat[i] = std::max(v_hat[i], v[i]);
      var[i] -= m[i] * alpha / (std::sqrt(denominator_v) + epsilon);
    }
    ++iterations;
  }
};

AdamReference reference(double lr, double beta_1, double beta_2, double epsilon, std::vector<double> var) {
  const std::size_t n = var.size();
  return {lr,
          beta_1,
          beta_2,
          epsilon,
          0.0,
          false,
          std::move(var),
          std::vector<double>(n),
          std::vector<double>(n),
          std::vector<double>(n)};
}

// Large gradients first, then small ones: v decays, so amsgrad's running maximum differs from v.
const std::vector<std::vector<double>> kAdamGradients = {
    {2.0, -1.0, 0.5}, {1.5, 0.5, -0.25}, {-0.1, 0.05, 0.02}, {0.01, -0.02, 0.03}, {0.3, 0.1, -0.2}};

TEST(Adam, StepsFollowTheFormula) {
  Adam adam({.learning_rate = 0.01, .beta_1 = 0.8, .beta_2 = 0.95, .epsilon = 1e-3});
  Variable w = make_variable("w", {1.0f, -2.0f, 0.5f});
  AdamReference want = reference(0.01, 0.8, 0.95, 1e-3, {1.0, -2.0, 0.5});
  for (const auto& g : kAdamGradients) {
    adam.apply({gradient(g)}, {w});
    want.step(g);
    expect_values(w, want.var);
  }
  EXPECT_EQ(adam.iterations(), 5);
}

TEST(Adam, DefaultsFollowTheFormula) {
  Adam adam;
  Variable w = make_variable("w", {1.0f, -2.0f, 0.5f});
  AdamReference want = reference(0.001, 0.9, 0.999, 1e-7, {1.0, -2.0, 0.5});
  for (const auto& g : kAdamGradients) {
    adam.apply({gradient(g)}, {w});
    want.step(g);
    expect_values(w, want.var);
  }
}

TEST(Adam, AmsgradUsesTheLargestVelocity) {
  Adam adam({.learning_rate = 0.01, .beta_2 = 0.5, .amsgrad = true});
  Variable w = make_variable("w", {1.0f, -2.0f, 0.5f});
  AdamReference want = reference(0.01, 0.9, 0.5, 1e-7, {1.0, -2.0, 0.5});
  want.amsgrad = true;
  AdamReference plain = want;
  plain.amsgrad = false;
  for (const auto& g : kAdamGradients) {
    adam.apply({gradient(g)}, {w});
    want.step(g);
    plain.step(g);
    expect_values(w, want.var);
  }
  EXPECT_GT(std::abs(want.var[0] - plain.var[0]), 1e-4);  // the variant was exercised
}

TEST(Adam, SlotsInterleaveMomentumAndVelocityPerVariable) {
  Variable kernel = make_variable("dense/kernel", {1, 2, 3});
  Variable bias = make_variable("dense/bias", {0});
  Adam adam({.amsgrad = true});
  adam.apply({gradient({1, 1, 1}), gradient({1})}, {kernel, bias});
  std::vector<std::string> names;
  for (const Variable& v : adam.variables()) names.push_back(v.name());
  EXPECT_EQ(names, (std::vector<std::string>{"adam/iteration", "adam/learning_rate", "adam/dense_kernel_momentum",
                                             "adam/dense_kernel_velocity", "adam/dense_bias_momentum",
                                             "adam/dense_bias_velocity", "adam/dense_kernel_velocity_hat",
                                             "adam/dense_bias_velocity_hat"}));
  EXPECT_EQ(adam.variables()[2].shape(), kernel.shape());
  EXPECT_EQ(adam.variables()[4].shape(), bias.shape());
}

TEST(Adam, DefaultsAreKeras) {
  Adam adam;
  EXPECT_EQ(adam.name(), "adam");
  EXPECT_DOUBLE_EQ(adam.learning_rate(), 0.001f);
  EXPECT_EQ(adam.options().beta_1, 0.9);
  EXPECT_EQ(adam.options().beta_2, 0.999);
  EXPECT_EQ(adam.options().epsilon, 1e-7);
  EXPECT_FALSE(adam.options().amsgrad);
  EXPECT_FALSE(adam.options().weight_decay.has_value());
}

TEST(Adam, BadOptionsThrowNamingThem) {
  std::string m = error_message<ValueError>([] { Adam({.beta_1 = 1.0}); });
  EXPECT_TRUE(contains(m, "adam") && contains(m, "beta_1")) << m;
  m = error_message<ValueError>([] { Adam({.beta_2 = -0.5}); });
  EXPECT_TRUE(contains(m, "adam") && contains(m, "beta_2")) << m;
  m = error_message<ValueError>([] { Adam({.epsilon = -1e-8}); });
  EXPECT_TRUE(contains(m, "adam") && contains(m, "epsilon")) << m;
  m = error_message<ValueError>([] { Adam({.clipnorm = 1.0, .global_clipnorm = 1.0}); });
  EXPECT_TRUE(contains(m, "clipnorm") && contains(m, "global_clipnorm")) << m;
}

TEST(Adam, BFloat16VariablesKeepTheirDtype) {
  Variable w("w", Tensor::full({2}, 1.0, DType::bfloat16));
  Adam adam({.learning_rate = 0.125});
  adam.apply({Tensor::full({2}, 0.5, DType::bfloat16)}, {w});
  EXPECT_EQ(w.dtype(), DType::bfloat16);
  EXPECT_EQ(adam.variables()[2].dtype(), DType::bfloat16);
  // First step: alpha = lr * sqrt(1 - b2) / (1 - b1), m = 0.1 g, sqrt(v) = sqrt(0.001) |g|, so the
  // step is lr * sign(g) up to epsilon: 1 - 0.125 = 0.875, exact in bfloat16.
  EXPECT_NEAR(w.value().to_vector<float>()[0], 0.875f, 4e-3);
}

TEST(AdamW, DecaysThenAppliesAdam) {
  AdamW adamw({.learning_rate = 0.01, .weight_decay = 0.1});
  Variable w = make_variable("w", {1.0f, -2.0f, 0.5f});
  AdamReference want = reference(0.01, 0.9, 0.999, 1e-7, {1.0, -2.0, 0.5});
  want.weight_decay = 0.1;
  for (const auto& g : kAdamGradients) {
    adamw.apply({gradient(g)}, {w});
    want.step(g);  // Keras: var -= var * weight_decay * lr, then Adam's update
    expect_values(w, want.var);
  }
}

TEST(AdamW, DefaultsAreKeras) {
  AdamW adamw;
  EXPECT_EQ(adamw.name(), "adamw");
  EXPECT_EQ(adamw.options().weight_decay, 0.004);
  EXPECT_EQ(adamw.options().beta_1, 0.9);
  EXPECT_EQ(adamw.options().epsilon, 1e-7);
  EXPECT_DOUBLE_EQ(adamw.learning_rate(), 0.001f);

  Variable w = make_variable("dense/kernel", {1.0f, -2.0f});
  adamw.apply({gradient({0.5, 0.5})}, {w});
  AdamReference want = reference(0.001, 0.9, 0.999, 1e-7, {1.0, -2.0});
  want.weight_decay = 0.004;
  want.step({0.5, 0.5});
  expect_values(w, want.var);
  EXPECT_EQ(adamw.variables()[2].name(), "adamw/dense_kernel_momentum");
}

TEST(AdamW, BadWeightDecayThrowsNamingIt) {
  std::string m = error_message<ValueError>([] { AdamW({.weight_decay = -0.01}); });
  EXPECT_TRUE(contains(m, "adamw") && contains(m, "weight_decay")) << m;
  m = error_message<ValueError>([] { AdamW({.beta_1 = 2.0, .name = "mine"}); });
  EXPECT_TRUE(contains(m, "mine") && contains(m, "beta_1")) << m;
}

}  // namespace
}  // namespace kestrel::optimizers
