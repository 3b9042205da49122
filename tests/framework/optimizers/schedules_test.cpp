// Learning-rate schedules against Keras's formulas, and optimizers that follow them.
#include "framework/optimizers/schedules.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "framework/core/error.h"
#include "framework/optimizers/sgd.h"
#include "tests/support/error_message.h"

namespace kestrel::optimizers::schedules {
namespace {

using kestrel::testing::contains;
using kestrel::testing::error_message;

TEST(ExponentialDecay, FollowsTheFormula) {
  ExponentialDecay schedule({.initial_learning_rate = 0.1, .decay_steps = 10, .decay_rate = 0.5});
  for (std::int64_t step : {0, 1, 5, 10, 15, 100}) {
    // Keras: initial_learning_rate * decay_rate ^ (step / decay_steps)
    EXPECT_NEAR(schedule(step), 0.1 * std::pow(0.5, step / 10.0), 1e-15) << "step " << step;
  }
  EXPECT_EQ(schedule.name(), "ExponentialDecay");
}

TEST(ExponentialDecay, StaircaseFloorsTheExponent) {
  ExponentialDecay schedule({.initial_learning_rate = 0.1, .decay_steps = 10, .decay_rate = 0.5, .staircase = true});
  EXPECT_DOUBLE_EQ(schedule(0), 0.1);
  EXPECT_DOUBLE_EQ(schedule(9), 0.1);
  EXPECT_DOUBLE_EQ(schedule(10), 0.05);
  EXPECT_DOUBLE_EQ(schedule(19), 0.05);
  EXPECT_DOUBLE_EQ(schedule(25), 0.025);
}

TEST(ExponentialDecay, BadOptionsThrowNamingThem) {
  std::string m =
      error_message<ValueError>([] { ExponentialDecay({.initial_learning_rate = 0.1, .decay_rate = 0.5}); });
  EXPECT_TRUE(contains(m, "ExponentialDecay") && contains(m, "decay_steps")) << m;
  m = error_message<ValueError>(
      [] { ExponentialDecay({.initial_learning_rate = 0.1, .decay_steps = 0, .decay_rate = 0.5}); });
  EXPECT_TRUE(contains(m, "ExponentialDecay") && contains(m, "decay_steps") && contains(m, "> 0")) << m;
  m = error_message<ValueError>([] { ExponentialDecay({.decay_steps = 10, .decay_rate = 0.5}); });
  EXPECT_TRUE(contains(m, "initial_learning_rate")) << m;
  m = error_message<ValueError>([] { ExponentialDecay({.initial_learning_rate = 0.1, .decay_steps = 10}); });
  EXPECT_TRUE(contains(m, "decay_rate")) << m;
}

TEST(PiecewiseConstantDecay, EachIntervalIncludesItsUpperBoundary) {
  PiecewiseConstantDecay schedule({.boundaries = {100, 110}, .values = {1.0, 0.5, 0.1}});
  // Keras: values[0] for step <= b[0], values[1] for b[0] < step <= b[1], values[2] after.
  EXPECT_EQ(schedule(0), 1.0);
  EXPECT_EQ(schedule(100), 1.0);
  EXPECT_EQ(schedule(101), 0.5);
  EXPECT_EQ(schedule(110), 0.5);
  EXPECT_EQ(schedule(111), 0.1);
  EXPECT_EQ(schedule(100000), 0.1);
  EXPECT_EQ(schedule.name(), "PiecewiseConstantDecay");
}

TEST(PiecewiseConstantDecay, NeedsOneMoreValueThanBoundaries) {
  std::string m = error_message<ValueError>([] {
    PiecewiseConstantDecay({.boundaries = {10, 20}, .values = {1.0, 0.5}});
  });
  EXPECT_TRUE(contains(m, "PiecewiseConstantDecay") && contains(m, "2 boundaries and 2 values")) << m;
  m = error_message<ValueError>([] { PiecewiseConstantDecay({.boundaries = {20, 10}, .values = {1.0, 0.5, 0.1}}); });
  EXPECT_TRUE(contains(m, "PiecewiseConstantDecay") && contains(m, "increase")) << m;
  EXPECT_EQ(PiecewiseConstantDecay({.values = {0.3}})(50), 0.3);
}

// Keras's cosine decay of `from` over decay_steps, for reference.
double cosine(double step, double decay_steps, double from, double alpha) {
  const double cosine_decayed = 0.5 * (1 + std::cos(std::numbers::pi * step / decay_steps));
  return from * ((1 - alpha) * cosine_decayed + alpha);
}

TEST(CosineDecay, DecaysToAlphaTimesInitialThenHolds) {
  CosineDecay schedule({.initial_learning_rate = 0.2, .decay_steps = 100, .alpha = 0.1});
  for (std::int64_t step : {0, 1, 25, 50, 99, 100}) {
    EXPECT_NEAR(schedule(step), cosine(step, 100, 0.2, 0.1), 1e-15) << "step " << step;
  }
  EXPECT_NEAR(schedule(50), 0.2 * (0.9 * 0.5 + 0.1), 1e-15);
  EXPECT_NEAR(schedule(100), 0.02, 1e-15);
  EXPECT_NEAR(schedule(1000), 0.02, 1e-15);  // the step is clamped at decay_steps
  EXPECT_EQ(schedule.name(), "CosineDecay");
}

TEST(CosineDecay, WarmsUpLinearlyThenDecaysFromTheTarget) {
  CosineDecay schedule(
      {.initial_learning_rate = 0.0, .decay_steps = 100, .alpha = 0.1, .warmup_target = 1e-3, .warmup_steps = 10});
  // Keras: (target - initial) * step / warmup_steps + initial while step < warmup_steps ...
  EXPECT_NEAR(schedule(0), 0.0, 1e-18);
  EXPECT_NEAR(schedule(1), 1e-4, 1e-18);
  EXPECT_NEAR(schedule(5), 5e-4, 1e-18);
  EXPECT_NEAR(schedule(9), 9e-4, 1e-18);
  // ... then the cosine from the target over decay_steps, to alpha * target.
  EXPECT_NEAR(schedule(10), 1e-3, 1e-18);
  EXPECT_NEAR(schedule(60), cosine(50, 100, 1e-3, 0.1), 1e-18);
  EXPECT_NEAR(schedule(110), 1e-4, 1e-18);
  EXPECT_NEAR(schedule(5000), 1e-4, 1e-18);
}

TEST(CosineDecay, WarmupFromANonZeroStart) {
  CosineDecay schedule({.initial_learning_rate = 0.1, .decay_steps = 10, .warmup_target = 0.5, .warmup_steps = 4});
  EXPECT_NEAR(schedule(2), 0.1 + (0.5 - 0.1) * 2 / 4.0, 1e-15);
  EXPECT_NEAR(schedule(7), cosine(3, 10, 0.5, 0.0), 1e-15);
}

TEST(CosineDecay, BadOptionsThrowNamingThem) {
  std::string m = error_message<ValueError>([] { CosineDecay({.initial_learning_rate = 0.1, .decay_steps = -5}); });
  EXPECT_TRUE(contains(m, "CosineDecay") && contains(m, "decay_steps")) << m;
  m = error_message<ValueError>([] { CosineDecay({.initial_learning_rate = 0.1}); });
  EXPECT_TRUE(contains(m, "CosineDecay") && contains(m, "decay_steps")) << m;
  m = error_message<ValueError>(
      [] { CosineDecay({.initial_learning_rate = 0.1, .decay_steps = 10, .warmup_steps = -1}); });
  EXPECT_TRUE(contains(m, "CosineDecay") && contains(m, "warmup_steps")) << m;
}

TEST(ScheduledOptimizer, UsesTheScheduleValueAtEachStep) {
  // Rates 1.0 (steps 0-1), 0.5 (step 2), 0.25 (later); gradient 1 moves w by the rate.
  SGD sgd({.learning_rate = PiecewiseConstantDecay({.boundaries = {1, 2}, .values = {1.0, 0.5, 0.25}})});
  Variable w("w", Tensor::scalar(10.0));
  const std::vector<double> rates = {1.0, 1.0, 0.5, 0.25, 0.25};
  double want = 10.0;
  for (double rate : rates) {
    EXPECT_DOUBLE_EQ(sgd.learning_rate(), rate) << "step " << sgd.iterations();
    sgd.apply({Tensor::scalar(1.0)}, {w});
    want -= rate;
    EXPECT_DOUBLE_EQ(w.value().item(), want) << "step " << sgd.iterations();
  }
}

TEST(ScheduledOptimizer, WeightDecayUsesTheScheduledRate) {
  SGD sgd({.learning_rate = ExponentialDecay({.initial_learning_rate = 0.5, .decay_steps = 1, .decay_rate = 0.5}),
           .weight_decay = 0.5});
  Variable w("w", Tensor::scalar(8.0));
  double want = 8.0;
  for (int step = 0; step < 3; ++step) {
    const double lr = 0.5 * std::pow(0.5, step);
    sgd.apply({Tensor::scalar(0.0)}, {w});
    want -= want * 0.5 * lr;  // Keras: var -= var * weight_decay * lr
    EXPECT_NEAR(w.value().item(), want, 1e-6) << "step " << step;
  }
}

TEST(ScheduledOptimizer, HasNoLearningRateVariableAndRefusesSetLearningRate) {
  SGD sgd({.learning_rate = CosineDecay({.initial_learning_rate = 0.1, .decay_steps = 10})});
  Variable w("w", Tensor::scalar(1.0));
  sgd.apply({Tensor::scalar(1.0)}, {w});
  std::vector<Variable> vars = sgd.variables();
  ASSERT_EQ(vars.size(), 1u);
  EXPECT_EQ(vars[0].name(), "SGD/iteration");
  std::string m = error_message<ValueError>([&] { sgd.set_learning_rate(0.5); });
  EXPECT_TRUE(contains(m, "CosineDecay")) << m;
}

}  // namespace
}  // namespace kestrel::optimizers::schedules
