// SGD against Keras's update rules, computed by hand in double.
#include "framework/optimizers/sgd.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
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

// Gradients for four steps of a two-element variable; they change sign so momentum matters.
const std::vector<std::vector<double>> kSgdGradients = {{0.5, -1.0}, {0.25, 2.0}, {-1.5, 0.75}, {1.0, -0.5}};

TEST(SGD, PlainStepsFollowTheFormula) {
  SGD sgd({.learning_rate = 0.1});
  Variable w = make_variable("w", {1.0f, -2.0f});
  std::vector<double> want = {1.0, -2.0};
  for (const auto& g : kSgdGradients) {
    sgd.apply({gradient(g)}, {w});
    for (std::size_t i = 0; i < want.size(); ++i) want[i] -= 0.1 * g[i];  // Keras: var -= lr * g
    expect_values(w, want);
  }
  EXPECT_EQ(sgd.iterations(), 4);
}

TEST(SGD, MomentumFollowsTheFormula) {
  SGD sgd({.learning_rate = 0.1, .momentum = 0.9});
  Variable w = make_variable("w", {1.0f, -2.0f});
  std::vector<double> want = {1.0, -2.0}, m = {0.0, 0.0};
  for (const auto& g : kSgdGradients) {
    sgd.apply({gradient(g)}, {w});
    for (std::size_t i = 0; i < want.size(); ++i) {
      m[i] = 0.9 * m[i] - 0.1 * g[i];  // Keras: m = momentum * m - lr * g; var += m
      want[i] += m[i];
    }
    expect_values(w, want);
  }
}

TEST(SGD, NesterovFollowsTheFormula) {
  SGD sgd({.learning_rate = 0.05, .momentum = 0.8, .nesterov = true});
  Variable w = make_variable("w", {1.0f, -2.0f});
  std::vector<double> want = {1.0, -2.0}, m = {0.0, 0.0};
  for (const auto& g : kSgdGradients) {
    sgd.apply({gradient(g)}, {w});
    for (std::size_t i = 0; i < want.size(); ++i) {
      m[i] = 0.8 * m[i] - 0.05 * g[i];      // Keras: m = momentum * m - lr * g
      want[i] += 0.8 * m[i] - 0.05 * g[i];  // var += momentum * m - lr * g
    }
    expect_values(w, want);
  }
}

TEST(SGD, WeightDecayShrinksBeforeTheUpdate) {
  SGD sgd({.learning_rate = 0.1, .weight_decay = 0.5});
  Variable w = make_variable("w", {1.0f, -2.0f});
  std::vector<double> want = {1.0, -2.0};
  for (const auto& g : kSgdGradients) {
    sgd.apply({gradient(g)}, {w});
    for (std::size_t i = 0; i < want.size(); ++i) {
      want[i] -= want[i] * 0.5 * 0.1;  // Keras: var -= var * weight_decay * lr, then the update
      want[i] -= 0.1 * g[i];
    }
    expect_values(w, want);
  }
}

TEST(SGD, KeepsAMomentumSlotOnlyWithMomentum) {
  Variable w = make_variable("dense/kernel", {1.0f, 2.0f});
  SGD plain;
  plain.apply({gradient({1, 1})}, {w});
  ASSERT_EQ(plain.variables().size(), 2u);  // iteration, learning_rate

  SGD with_momentum({.momentum = 0.5});
  with_momentum.apply({gradient({1, 1})}, {w});
  std::vector<Variable> vars = with_momentum.variables();
  ASSERT_EQ(vars.size(), 3u);
  EXPECT_EQ(vars[0].name(), "SGD/iteration");
  EXPECT_EQ(vars[1].name(), "SGD/learning_rate");
  EXPECT_EQ(vars[2].name(), "SGD/dense_kernel_momentum");
  EXPECT_EQ(vars[2].shape(), w.shape());
  EXPECT_FALSE(vars[2].trainable());
}

TEST(SGD, DefaultsAreKeras) {
  SGD sgd;
  EXPECT_EQ(sgd.name(), "SGD");
  EXPECT_DOUBLE_EQ(sgd.learning_rate(), 0.01f);  // stored as a float32 variable
  EXPECT_EQ(sgd.options().momentum, 0.0);
  EXPECT_FALSE(sgd.options().nesterov);
  EXPECT_EQ(SGD({.name = "fast"}).name(), "fast");
}

TEST(SGD, MomentumOutsideZeroToOneThrowsNamingIt) {
  for (double bad : {-0.1, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    std::string m = error_message<ValueError>([&] { SGD({.momentum = bad}); });
    EXPECT_TRUE(contains(m, "SGD")) << m;
    EXPECT_TRUE(contains(m, "momentum")) << m;
  }
  EXPECT_NO_THROW(SGD({.momentum = 1.0}));
}

TEST(SGD, BadCommonOptionsThrowNamingThem) {
  std::string m = error_message<ValueError>([] { SGD({.learning_rate = -1.0}); });
  EXPECT_TRUE(contains(m, "SGD") && contains(m, "learning_rate")) << m;
  m = error_message<ValueError>([] { SGD({.clipvalue = -1.0}); });
  EXPECT_TRUE(contains(m, "SGD") && contains(m, "clipvalue")) << m;
  m = error_message<ValueError>([] { SGD({.weight_decay = -0.1, .name = "mine"}); });
  EXPECT_TRUE(contains(m, "mine") && contains(m, "weight_decay")) << m;
}

}  // namespace
}  // namespace kestrel::optimizers
