// RMSprop against Keras's update rules, computed by hand in double.
#include "framework/optimizers/rmsprop.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "framework/core/error.h"
#include "tests/framework/optimizers/optimizer_test_util.h"
#include "tests/support/error_message.h"

namespace kestrel::optimizers {
namespace {

using kestrel::testing::contains;
using kestrel::testing::error_message;
using testing::expect_values;
using testing::gradient;
using testing::make_variable;

// RMSprop in double, line for line with Keras's update_step.
struct RMSpropReference {
  double lr, rho, momentum, epsilon;
  bool centered;
  std::vector<double> var, v = std::vector<double>(var.size()), a = std::vector<double>(var.size()),
                           m = std::vector<double>(var.size());

  void step(const std::vector<double>& g) {
    for (std::size_t i = 0; i < var.size(); ++i) {
      v[i] = rho * v[i] + (1 - rho) * g[i] * g[i];
      double denominator = v[i] + epsilon;
      if (centered) {
        a[i] = rho * a[i] + (1 - rho) * g[i];
        denominator = v[i] - a[i] * a[i] + epsilon;
      }
      const double increment = lr * g[i] / std::sqrt(denominator);
      if (momentum > 0) {
        m[i] = momentum * m[i] + increment;
        var[i] -= m[i];
      } else {
        var[i] -= increment;
      }
    }
  }
};

const std::vector<std::vector<double>> kRmspropGradients = {
    {2.0, -1.0, 0.5}, {1.5, 0.5, -0.25}, {-0.1, 0.05, 0.02}, {0.01, -0.02, 0.03}, {0.3, 0.1, -0.2}};

void run_variant(RMSpropOptions options, bool centered) {
  const double lr = options.learning_rate.at(0);
  RMSprop rmsprop(options);
  Variable w = make_variable("w", {1.0f, -2.0f, 0.5f});
  RMSpropReference want{lr, options.rho, options.momentum, options.epsilon, centered, {1.0, -2.0, 0.5}};
  for (const auto& g : kRmspropGradients) {
    rmsprop.apply({gradient(g)}, {w});
    want.step(g);
    expect_values(w, want.var);
  }
}

TEST(RMSprop, PlainStepsFollowTheFormula) { run_variant({.learning_rate = 0.01, .rho = 0.8}, false); }

TEST(RMSprop, DefaultsFollowTheFormula) { run_variant({}, false); }

TEST(RMSprop, MomentumFollowsTheFormula) { run_variant({.learning_rate = 0.01, .rho = 0.8, .momentum = 0.9}, false); }

TEST(RMSprop, CenteredFollowsTheFormula) {
  run_variant({.learning_rate = 0.01, .rho = 0.8, .epsilon = 1e-3, .centered = true}, true);
}

TEST(RMSprop, CenteredWithMomentumFollowsTheFormula) {
  run_variant({.learning_rate = 0.01, .rho = 0.8, .momentum = 0.5, .epsilon = 1e-3, .centered = true}, true);
}

TEST(RMSprop, SlotsAreGroupedByKindAsKerasCreatesThem) {
  Variable kernel = make_variable("dense/kernel", {1, 2});
  Variable bias = make_variable("dense/bias", {0});
  RMSprop plain;
  plain.apply({gradient({1, 1}), gradient({1})}, {kernel, bias});
  EXPECT_EQ(plain.variables().size(), 4u);  // iteration, learning_rate, two velocities

  RMSprop rmsprop({.momentum = 0.9, .centered = true});
  rmsprop.apply({gradient({1, 1}), gradient({1})}, {kernel, bias});
  std::vector<std::string> names;
  for (const Variable& v : rmsprop.variables()) names.push_back(v.name());
  EXPECT_EQ(names, (std::vector<std::string>{
                       "rmsprop/iteration", "rmsprop/learning_rate", "rmsprop/dense_kernel_velocity",
                       "rmsprop/dense_bias_velocity", "rmsprop/dense_kernel_momentum", "rmsprop/dense_bias_momentum",
                       "rmsprop/dense_kernel_average_gradient", "rmsprop/dense_bias_average_gradient"}));
}

TEST(RMSprop, DefaultsAreKeras) {
  RMSprop rmsprop;
  EXPECT_EQ(rmsprop.name(), "rmsprop");
  EXPECT_DOUBLE_EQ(rmsprop.learning_rate(), 0.001f);
  EXPECT_EQ(rmsprop.options().rho, 0.9);
  EXPECT_EQ(rmsprop.options().momentum, 0.0);
  EXPECT_EQ(rmsprop.options().epsilon, 1e-7);
  EXPECT_FALSE(rmsprop.options().centered);
}

TEST(RMSprop, BadOptionsThrowNamingThem) {
  std::string m = error_message<ValueError>([] { RMSprop({.rho = 1.0}); });
  EXPECT_TRUE(contains(m, "rmsprop") && contains(m, "rho")) << m;
  m = error_message<ValueError>([] { RMSprop({.momentum = 1.5}); });
  EXPECT_TRUE(contains(m, "rmsprop") && contains(m, "momentum")) << m;
  m = error_message<ValueError>([] { RMSprop({.epsilon = -1.0, .name = "mine"}); });
  EXPECT_TRUE(contains(m, "mine") && contains(m, "epsilon")) << m;
}

}  // namespace
}  // namespace kestrel::optimizers
