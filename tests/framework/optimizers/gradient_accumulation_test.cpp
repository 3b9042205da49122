// gradient_accumulation_steps = k (Keras 3): k calls of apply() make one update with the mean of
// their gradients, clipped and decayed as one step's; iterations() counts updates.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/ops/elementwise.h"
#include "framework/optimizers/adam.h"
#include "framework/optimizers/rmsprop.h"
#include "framework/optimizers/schedules.h"
#include "framework/optimizers/sgd.h"
#include "tests/framework/optimizers/optimizer_test_util.h"

namespace kestrel::optimizers {
namespace {

using testing::gradient;
using testing::make_variable;

std::vector<std::vector<double>> micro_gradients() {
  return {{0.5, -1.0, 2.0}, {1.5, 0.25, -4.0}, {-0.5, 3.0, 0.5}, {2.0, -2.0, 1.0}, {0.1, 0.2, -0.3}, {4.0, 1.0, 0.0}};
}

// The mean of micro_gradients()[first .. first + k), summed and divided in the optimizer's order.
Tensor mean_of(std::size_t first, int k) {
  Tensor sum = gradient(micro_gradients()[first]);
  for (int i = 1; i < k; ++i) sum = sum + gradient(micro_gradients()[first + static_cast<std::size_t>(i)]);
  return sum / static_cast<double>(k);
}

void expect_same_values(const Variable& got, const Variable& want, const std::string& what) {
  EXPECT_EQ(got.value().to_vector<float>(), want.value().to_vector<float>()) << what;
}

// gradient_accumulation_steps for `make`: k, or none for k = 0.
std::optional<int> steps(int k) { return k > 0 ? std::optional<int>(k) : std::nullopt; }

// k calls with accumulation against one call with the mean, for every optimizer's update rule.
template <class Make>
void expect_k_calls_equal_one_with_the_mean(Make make, int k, const std::string& what) {
  auto accumulating = make(k);
  auto plain = make(0);
  Variable w_accumulating = make_variable("w", {1.0f, -2.0f, 0.5f});
  Variable w_plain = make_variable("w", {1.0f, -2.0f, 0.5f});
  for (std::size_t call = 0; call < 6; ++call) {
    const Variable before("before", w_accumulating.value());
    accumulating->apply({gradient(micro_gradients()[call])}, {w_accumulating});
    if ((call + 1) % static_cast<std::size_t>(k) == 0) {
      plain->apply({mean_of(call + 1 - static_cast<std::size_t>(k), k)}, {w_plain});
      expect_same_values(w_accumulating, w_plain, what + ", update after call " + std::to_string(call + 1));
    } else {
      expect_same_values(w_accumulating, before, what + ", call " + std::to_string(call + 1) + " left w alone");
    }
    EXPECT_EQ(accumulating->iterations(), plain->iterations()) << what;
    EXPECT_EQ(accumulating->iterations_variable().value().item(), static_cast<double>(call + 1)) << what;
  }
}

TEST(GradientAccumulation, KCallsOfSGDWithMomentumAreOneStepWithTheMean) {
  expect_k_calls_equal_one_with_the_mean(
      [](int k) {
        return std::make_unique<SGD>(SGDOptions{
            .learning_rate = 0.1, .momentum = 0.9, .nesterov = true, .gradient_accumulation_steps = steps(k)});
      },
      3, "SGD");
}

TEST(GradientAccumulation, KCallsOfAdamWithClippingAndDecayAreOneStepWithTheMean) {
  // Clipping applies to the mean, not to each call's gradients: the norms here exceed the limit.
  expect_k_calls_equal_one_with_the_mean(
      [](int k) {
        return std::make_unique<Adam>(AdamOptions{.learning_rate = 0.01,
                                                  .amsgrad = true,
                                                  .weight_decay = 0.05,
                                                  .global_clipnorm = 1.0,
                                                  .gradient_accumulation_steps = steps(k)});
      },
      2, "Adam");
}

TEST(GradientAccumulation, KCallsOfRMSpropAreOneStepWithTheMean) {
  expect_k_calls_equal_one_with_the_mean(
      [](int k) {
        return std::make_unique<RMSprop>(RMSpropOptions{
            .learning_rate = 0.01, .momentum = 0.5, .clipnorm = 2.0, .gradient_accumulation_steps = steps(k)});
      },
      3, "RMSprop");
}

TEST(GradientAccumulation, OneIsEveryCall) {
  expect_k_calls_equal_one_with_the_mean(
      [](int) { return std::make_unique<Adam>(AdamOptions{.gradient_accumulation_steps = 1}); }, 1, "Adam, k = 1");
}

TEST(GradientAccumulation, AccumulatorsAreSlotsInKerasOrderAndStartAgainAfterAnUpdate) {
  SGD sgd({.momentum = 0.9, .gradient_accumulation_steps = 2});
  Variable w = make_variable("dense/kernel", {1.0f, 2.0f, 3.0f});
  sgd.apply({gradient({1.0, 1.0, 1.0})}, {w});
  std::vector<std::string> names;
  for (const Variable& v : sgd.variables()) names.push_back(v.name());
  // As Keras builds them: the counter, the rate, the accumulators, then the subclass's slots.
  EXPECT_EQ(names, (std::vector<std::string>{"SGD/iteration", "SGD/learning_rate",
                                             "SGD/dense_kernel_gradient_accumulator", "SGD/dense_kernel_momentum"}));
  const Variable accumulator = sgd.variables()[2];  // a handle: variables() returns a new vector
  EXPECT_EQ(accumulator.value().to_vector<float>(), (std::vector<float>{1.0f, 1.0f, 1.0f}));
  sgd.apply({gradient({2.0, 0.0, -1.0})}, {w});
  EXPECT_EQ(accumulator.value().to_vector<float>(), (std::vector<float>{0.0f, 0.0f, 0.0f}));
}

TEST(GradientAccumulation, SchedulesCountUpdatesNotCalls) {
  const schedules::ExponentialDecay decay({.initial_learning_rate = 0.1, .decay_steps = 1, .decay_rate = 0.5});
  SGD sgd({.learning_rate = decay, .gradient_accumulation_steps = 4});
  Variable w = make_variable("w", {1.0f});
  for (int call = 0; call < 6; ++call) sgd.apply({gradient({1.0})}, {w});
  EXPECT_EQ(sgd.iterations(), 1);
  EXPECT_DOUBLE_EQ(sgd.learning_rate(), decay(1));
  // The one update used the rate of step 0: w = 1 - 0.1 * mean(1, 1, 1, 1).
  EXPECT_FLOAT_EQ(w.value().to_vector<float>()[0], 0.9f);
}

TEST(GradientAccumulation, AVariableWithoutAGradientIsLeftAlone) {
  SGD sgd({.learning_rate = 0.5, .gradient_accumulation_steps = 2});
  Variable a = make_variable("a", {1.0f}), b = make_variable("b", {1.0f});
  sgd.apply({gradient({1.0}), Tensor()}, {a, b});
  sgd.apply({gradient({3.0}), Tensor()}, {a, b});
  EXPECT_FLOAT_EQ(a.value().to_vector<float>()[0], 0.0f);  // 1 - 0.5 * (1 + 3) / 2
  EXPECT_FLOAT_EQ(b.value().to_vector<float>()[0], 1.0f);
}

TEST(GradientAccumulation, StepsBelowOneAreRejectedNamingTheOption) {
  for (int k : {0, -3}) {
    try {
      Adam adam({.gradient_accumulation_steps = k});
      FAIL() << "gradient_accumulation_steps = " << k << " was accepted";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("gradient_accumulation_steps must be an integer >= 1"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("'adam'"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace kestrel::optimizers
