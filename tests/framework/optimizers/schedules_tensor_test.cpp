// The schedules' tensor form (a step tensor in, a float32 rate tensor out) against their double
// form: equal to float32 precision at every step, boundaries and warm-up included, eager and
// traced. The tensor form is what Optimizer::apply uses, so a compiled step follows the schedule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/jit/executor.h"
#include "framework/jit/trace.h"
#include "framework/optimizers/schedules.h"
#include "tests/support/error_message.h"

namespace kestrel::optimizers::schedules {
namespace {

using kestrel::testing::contains;
using kestrel::testing::error_message;

Tensor step_tensor(std::int64_t step) { return Tensor::from_vector<std::int64_t>({step}, Shape{}); }

// Steps 0..last, plus a few far beyond (where schedules clamp or keep decaying).
std::vector<std::int64_t> steps_through(std::int64_t last) {
  std::vector<std::int64_t> steps;
  for (std::int64_t s = 0; s <= last; ++s) steps.push_back(s);
  for (std::int64_t far : {last * 2, last * 10 + 7, std::int64_t{1} << 20}) steps.push_back(far);
  return steps;
}

// float32 precision: the tensor form computes in float32 (as Keras does), a dozen ops rounding
// in turn, so it may differ from the double form by a few float32 ulps (one is 1.2e-7 relative)
// of the rate, plus a sliver of the schedule's scale for rates that decay to 0.
void expect_float32_close(double got, double want, double scale, const std::string& where) {
  const double tolerance = 1e-6 * std::abs(want) + 1e-7 * scale;
  EXPECT_NEAR(got, want, tolerance) << where;
}

void expect_tensor_form_matches(const LearningRateSchedule& schedule, const std::vector<std::int64_t>& steps,
                                double scale) {
  for (std::int64_t step : steps) {
    const Tensor rate = schedule(step_tensor(step));
    ASSERT_EQ(rate.spec(), (TensorSpec{Shape{}, DType::float32})) << schedule.name();
    expect_float32_close(rate.item(), schedule(step), scale, schedule.name() + " at step " + std::to_string(step));
  }
}

TEST(ScheduleTensorForm, ExponentialDecay) {
  expect_tensor_form_matches(ExponentialDecay({.initial_learning_rate = 0.1, .decay_steps = 10, .decay_rate = 0.5}),
                             steps_through(300), 0.1);
  expect_tensor_form_matches(ExponentialDecay({.initial_learning_rate = 3e-4, .decay_steps = 7, .decay_rate = 0.96}),
                             steps_through(300), 3e-4);
}

TEST(ScheduleTensorForm, ExponentialDecayStaircaseStepsAtMultiplesOfDecaySteps) {
  ExponentialDecay schedule({.initial_learning_rate = 0.1, .decay_steps = 10, .decay_rate = 0.5, .staircase = true});
  expect_tensor_form_matches(schedule, steps_through(200), 0.1);
  // Exactly at and around the boundaries, where a float floor could slip by one.
  for (std::int64_t boundary : {10, 20, 100, 1000}) {
    EXPECT_EQ(schedule(step_tensor(boundary - 1)).item(), static_cast<float>(schedule(boundary - 1)));
    EXPECT_EQ(schedule(step_tensor(boundary)).item(), static_cast<float>(schedule(boundary)));
  }
}

TEST(ScheduleTensorForm, ExponentialDecayRateZero) {
  // 0 ^ 0 = 1 at step 0, then 0.
  ExponentialDecay schedule({.initial_learning_rate = 0.1, .decay_steps = 5, .decay_rate = 0.0});
  expect_tensor_form_matches(schedule, steps_through(20), 0.1);
}

TEST(ScheduleTensorForm, PiecewiseConstantDecayIsExactAtEveryBoundary) {
  PiecewiseConstantDecay schedule({.boundaries = {100, 110, 250}, .values = {1.0, 0.5, 0.1, 0.01}});
  for (std::int64_t step : steps_through(300)) {
    EXPECT_EQ(schedule(step_tensor(step)).item(), static_cast<float>(schedule(step))) << "step " << step;
  }
  PiecewiseConstantDecay constant({.values = {0.3}});
  EXPECT_EQ(constant(step_tensor(50)).item(), 0.3f);
}

TEST(ScheduleTensorForm, CosineDecay) {
  expect_tensor_form_matches(CosineDecay({.initial_learning_rate = 0.2, .decay_steps = 100, .alpha = 0.1}),
                             steps_through(150), 0.2);
  // alpha = 0 decays to exactly 0: the end of the curve, where 1 + cos loses its digits.
  expect_tensor_form_matches(CosineDecay({.initial_learning_rate = 1e-3, .decay_steps = 1000}), steps_through(1100),
                             1e-3);
  expect_tensor_form_matches(CosineDecay({.initial_learning_rate = 0.5, .decay_steps = 1}), steps_through(3), 0.5);
}

TEST(ScheduleTensorForm, CosineDecayWithWarmup) {
  expect_tensor_form_matches(
      CosineDecay(
          {.initial_learning_rate = 0.0, .decay_steps = 100, .alpha = 0.1, .warmup_target = 1e-3, .warmup_steps = 10}),
      steps_through(130), 1e-3);
  expect_tensor_form_matches(
      CosineDecay({.initial_learning_rate = 0.1, .decay_steps = 10, .warmup_target = 0.5, .warmup_steps = 4}),
      steps_through(20), 0.5);
  // A warm-up target with no warm-up steps decays from the target at once.
  expect_tensor_form_matches(
      CosineDecay({.initial_learning_rate = 0.1, .decay_steps = 10, .warmup_target = 0.5, .warmup_steps = 0}),
      steps_through(12), 0.5);
}

TEST(ScheduleTensorForm, AcceptsInt32Steps) {
  CosineDecay schedule({.initial_learning_rate = 0.2, .decay_steps = 100});
  const Tensor step = Tensor::from_vector<std::int32_t>({40}, Shape{});
  expect_float32_close(schedule(step).item(), schedule(40), 0.2, "int32 step 40");
}

TEST(ScheduleTensorForm, RejectsStepsThatAreNotIntegerScalars) {
  ExponentialDecay schedule({.initial_learning_rate = 0.1, .decay_steps = 10, .decay_rate = 0.5});
  std::string m = error_message<TypeError>([&] { schedule(Tensor::scalar(3.0)); });
  EXPECT_TRUE(contains(m, "ExponentialDecay: step is float32[]")) << m;
  m = error_message<ShapeError>([&] { schedule(Tensor::zeros({2}, DType::int64)); });
  EXPECT_TRUE(contains(m, "ExponentialDecay: step is int64[2]")) << m;
  m = error_message<ValueError>([&] { CosineDecay({.initial_learning_rate = 0.1, .decay_steps = 5})(Tensor()); });
  EXPECT_TRUE(contains(m, "CosineDecay: step is an undefined tensor")) << m;
}

// Each schedule traced with the step as a graph input, then run compiled at many steps.
TEST(ScheduleTensorForm, TracesAndRunsCompiled) {
  struct Scheduled {
    std::shared_ptr<LearningRateSchedule> schedule;
    double scale;
  };
  const std::vector<Scheduled> schedules = {
      {std::make_shared<ExponentialDecay>(
           ExponentialDecayOptions{.initial_learning_rate = 0.1, .decay_steps = 10, .decay_rate = 0.5}),
       0.1},
      {std::make_shared<ExponentialDecay>(ExponentialDecayOptions{
           .initial_learning_rate = 0.1, .decay_steps = 10, .decay_rate = 0.5, .staircase = true}),
       0.1},
      {std::make_shared<PiecewiseConstantDecay>(
           PiecewiseConstantDecayOptions{.boundaries = {5, 20}, .values = {1.0, 0.5, 0.25}}),
       1.0},
      {std::make_shared<CosineDecay>(CosineDecayOptions{.initial_learning_rate = 0.2, .decay_steps = 30, .alpha = 0.1}),
       0.2},
      {std::make_shared<CosineDecay>(CosineDecayOptions{
           .initial_learning_rate = 0.0, .decay_steps = 30, .warmup_target = 1e-2, .warmup_steps = 8}),
       1e-2},
  };
  for (const auto& [schedule, scale] : schedules) {
    jit::Graph graph;
    {
      jit::Trace trace;
      jit::TraceScope active(trace);
      const Tensor step = trace.input({Shape{}, DType::int64}, "step");
      graph = trace.finish({(*schedule)(step)});
    }
    jit::Executor executor(std::move(graph));
    for (std::int64_t step : steps_through(45)) {
      const double got = executor.run({step_tensor(step)})[0].item();
      expect_float32_close(got, (*schedule)(step), scale, schedule->name() + " compiled, step " + std::to_string(step));
    }
  }
}

}  // namespace
}  // namespace kestrel::optimizers::schedules
