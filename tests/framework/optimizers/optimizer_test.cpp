// What every optimizer shares: clipping, iterations, the learning-rate variable, variables()
// order, optimizers::get, argument checks, and convergence on a quadratic.
#include "framework/optimizers/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/error.h"
#include "framework/ops/ops.h"
#include "framework/optimizers/optimizers.h"
#include "tests/framework/optimizers/optimizer_test_util.h"
#include "tests/support/error_message.h"

namespace kestrel::optimizers {
namespace {

using kestrel::testing::contains;
using kestrel::testing::error_message;
using testing::expect_values;
using testing::gradient;
using testing::make_variable;

Tensor vec(const std::vector<float>& values) {
  return Tensor::from_vector(values, {static_cast<std::int64_t>(values.size())});
}

// With SGD at learning rate 1 a step subtracts the clipped gradient, which makes clipping visible.
TEST(Clipping, ClipvalueClampsEachElement) {
  SGD sgd({.learning_rate = 1.0, .clipvalue = 1.0});
  Variable w = make_variable("w", {0, 0, 0});
  sgd.apply({vec({5.0f, -0.5f, -7.0f})}, {w});
  expect_values(w, {-1.0, 0.5, 1.0});  // Keras: clip(g, -clipvalue, clipvalue)
}

TEST(Clipping, ClipnormRescalesEachGradientAboveTheThreshold) {
  SGD sgd({.learning_rate = 1.0, .clipnorm = 1.0});
  Variable a = make_variable("a", {0, 0}), b = make_variable("b", {0, 0});
  // |[3,4]| = 5 > 1: scaled to norm 1; |[0.3,0.4]| = 0.5 <= 1: unchanged. Each gradient on its own.
  sgd.apply({vec({3, 4}), vec({0.3f, 0.4f})}, {a, b});
  expect_values(a, {-0.6, -0.8});
  expect_values(b, {-0.3, -0.4});
}

TEST(Clipping, GlobalClipnormRescalesAllGradientsTogether) {
  Variable a = make_variable("a", {0, 0}), b = make_variable("b", {0});
  // The global norm of [3,4] and [12] is 13; a limit of 6.5 halves both.
  SGD above({.learning_rate = 1.0, .global_clipnorm = 6.5});
  above.apply({vec({3, 4}), vec({12})}, {a, b});
  expect_values(a, {-1.5, -2.0});
  expect_values(b, {-6.0});
  // Below the limit nothing changes.
  SGD below({.learning_rate = 1.0, .global_clipnorm = 20.0});
  below.apply({vec({3, 4}), vec({12})}, {a, b});
  expect_values(a, {-4.5, -6.0});
  expect_values(b, {-18.0});
}

TEST(Clipping, ClippedGradientsFeedAdam) {
  // Adam's first step is lr * g / (|g| + eps / sqrt(1 - beta_2)) elementwise, so clipping by value
  // only shows through epsilon; use a large epsilon to see it.
  Adam adam({.learning_rate = 1.0, .epsilon = 1.0, .clipvalue = 0.5});
  Variable w = make_variable("w", {0});
  adam.apply({vec({4})}, {w});
  const double g = 0.5, m = 0.1 * g, v = 0.001 * g * g, alpha = std::sqrt(0.001) / 0.1;
  expect_values(w, {-m * alpha / (std::sqrt(v) + 1.0)});
}

TEST(Optimizer, CountsIterations) {
  Adam adam;
  Variable w = make_variable("w", {1});
  EXPECT_EQ(adam.iterations(), 0);
  EXPECT_FALSE(adam.built());
  for (int i = 0; i < 3; ++i) adam.apply({vec({1})}, {w});
  EXPECT_EQ(adam.iterations(), 3);
  EXPECT_TRUE(adam.built());
  Variable iteration = adam.variables()[0];
  EXPECT_EQ(iteration.dtype(), DType::int64);
  EXPECT_EQ(iteration.value().item(), 3.0);
}

TEST(Optimizer, SetLearningRateChangesTheNextStep) {
  SGD sgd({.learning_rate = 0.5});
  Variable w = make_variable("w", {1});
  sgd.apply({vec({1})}, {w});
  expect_values(w, {0.5});
  sgd.set_learning_rate(0.25);
  EXPECT_DOUBLE_EQ(sgd.learning_rate(), 0.25);
  EXPECT_DOUBLE_EQ(sgd.variables()[1].value().item(), 0.25);
  sgd.apply({vec({1})}, {w});
  expect_values(w, {0.25});
}

TEST(Optimizer, VariablesListIterationLearningRateThenSlots) {
  Variable kernel = make_variable("dense/kernel", {1, 2});
  Variable bias = make_variable("dense/bias", {0});
  auto names = [&](Optimizer& optimizer) {
    optimizer.build({kernel, bias});
    std::vector<std::string> out;
    for (const Variable& v : optimizer.variables()) out.push_back(v.name());
    return out;
  };
  SGD sgd({.momentum = 0.9});
  EXPECT_EQ(names(sgd), (std::vector<std::string>{"SGD/iteration", "SGD/learning_rate", "SGD/dense_kernel_momentum",
                                                  "SGD/dense_bias_momentum"}));
  AdamW adamw;
  EXPECT_EQ(names(adamw), (std::vector<std::string>{"adamw/iteration", "adamw/learning_rate",
                                                    "adamw/dense_kernel_momentum", "adamw/dense_kernel_velocity",
                                                    "adamw/dense_bias_momentum", "adamw/dense_bias_velocity"}));
  EXPECT_EQ(adamw.variables()[1].dtype(), DType::float32);
  for (const Variable& v : adamw.variables()) EXPECT_FALSE(v.trainable()) << v.name();
}

TEST(Optimizer, SkipsVariablesWithoutAGradient) {
  SGD sgd({.learning_rate = 1.0, .weight_decay = 0.5});
  Variable a = make_variable("a", {1}), b = make_variable("b", {1});
  sgd.apply({vec({1}), Tensor()}, {a, b});
  expect_values(a, {-0.5});  // decayed to 0.5, then stepped
  expect_values(b, {1.0});   // neither decayed nor stepped
}

TEST(Optimizer, ClipsAroundMissingGradients) {
  // Regression: clipping used to read the dtype of an undefined gradient and crash.
  Variable a = make_variable("a", {0, 0}), b = make_variable("b", {1});
  SGD by_value({.learning_rate = 1.0, .clipvalue = 1.0});
  by_value.apply({vec({3, 4}), Tensor()}, {a, b});
  expect_values(a, {-1.0, -1.0});
  SGD by_norm({.learning_rate = 1.0, .clipnorm = 1.0});
  by_norm.apply({Tensor(), vec({3, 4})}, {b, a});
  expect_values(a, {-1.6, -1.8});
  SGD by_global_norm({.learning_rate = 1.0, .global_clipnorm = 2.5});
  by_global_norm.apply({vec({3, 4}), Tensor()}, {a, b});
  expect_values(a, {-3.1, -3.8});
  expect_values(b, {1.0});
}

TEST(Optimizer, RejectsMismatchedGradients) {
  Adam adam;
  Variable w = make_variable("w", {1, 2});
  std::string m = error_message<ValueError>([&] { adam.apply({vec({1, 2})}, {w, w}); });
  EXPECT_TRUE(contains(m, "adam") && contains(m, "1 gradients for 2 variables")) << m;
  m = error_message<ShapeError>([&] { adam.apply({vec({1, 2, 3})}, {w}); });
  EXPECT_TRUE(contains(m, "adam") && contains(m, "'w'")) << m;
}

TEST(Get, FindsOptimizersByKerasNameInAnyCase) {
  EXPECT_EQ(get("sgd")->name(), "SGD");
  EXPECT_EQ(get("Adam")->name(), "adam");
  EXPECT_EQ(get("ADAMW")->name(), "adamw");
  EXPECT_EQ(get("rmsprop")->name(), "rmsprop");
  EXPECT_NE(dynamic_cast<AdamW*>(get("adamw").get()), nullptr);
  EXPECT_DOUBLE_EQ(get("sgd")->learning_rate(), 0.01f);
  std::string m = error_message<ValueError>([] { get("adagrad"); });
  EXPECT_TRUE(contains(m, "adagrad") && contains(m, "sgd, adam, adamw, rmsprop")) << m;
}

// Minimizes sum((w - target)^2) from w = 0 with gradients from a GradientTape.
void expect_converges(Optimizer& optimizer, int steps, double tolerance) {
  const std::vector<float> target = {1.5f, -2.0f, 0.5f};
  Variable w = make_variable("w", {0, 0, 0});
  const Tensor t = vec(target);
  for (int i = 0; i < steps; ++i) {
    GradientTape tape;
    Tensor loss = ops::sum(ops::square(w.value() - t));
    optimizer.apply(tape.gradient(loss, {w.value()}), {w});
  }
  std::vector<float> got = w.value().to_vector<float>();
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], target[i], tolerance) << optimizer.name() << " element " << i;
  }
}

TEST(Convergence, EveryOptimizerMinimizesAQuadratic) {
  SGD sgd({.learning_rate = 0.1});
  expect_converges(sgd, 200, 1e-4);
  SGD momentum({.learning_rate = 0.05, .momentum = 0.9});
  expect_converges(momentum, 300, 1e-4);
  SGD nesterov({.learning_rate = 0.05, .momentum = 0.9, .nesterov = true});
  expect_converges(nesterov, 300, 1e-4);
  Adam adam({.learning_rate = 0.05});
  expect_converges(adam, 1000, 1e-3);
  Adam amsgrad({.learning_rate = 0.05, .amsgrad = true});
  expect_converges(amsgrad, 1000, 1e-3);
  AdamW adamw({.learning_rate = 0.05, .weight_decay = 0.0});
  expect_converges(adamw, 1000, 1e-3);
  RMSprop rmsprop({.learning_rate = 0.01});
  expect_converges(rmsprop, 1000, 2e-2);
  RMSprop centered({.learning_rate = 0.01, .momentum = 0.5, .centered = true});
  expect_converges(centered, 1000, 2e-2);
  SGD scheduled({.learning_rate = schedules::CosineDecay({.initial_learning_rate = 0.2, .decay_steps = 300})});
  expect_converges(scheduled, 300, 1e-4);
}

}  // namespace
}  // namespace kestrel::optimizers
