// Optimizer::apply traced as a compiled train step traces it: every optimizer variable (the step
// counter, slots) holds a symbolic graph input, so reading one on the host would throw JitError.
// With a schedule, the rate must then come from the counter's tensor; and the compiled update
// must give what the eager one gives.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/jit/executor.h"
#include "framework/jit/trace.h"
#include "framework/optimizers/adam.h"
#include "framework/optimizers/schedules.h"
#include "framework/optimizers/sgd.h"
#include "tests/framework/optimizers/optimizer_test_util.h"

namespace kestrel::optimizers {
namespace {

using testing::gradient;
using testing::make_variable;

// The learning rates to trace with: a constant, and each schedule (with and without warm-up).
std::vector<std::pair<std::string, std::function<LearningRate()>>> learning_rates() {
  using namespace schedules;
  return {
      {"constant", [] { return LearningRate(0.01); }},
      {"ExponentialDecay",
       [] { return ExponentialDecay({.initial_learning_rate = 0.1, .decay_steps = 2, .decay_rate = 0.5}); }},
      {"ExponentialDecay staircase",
       [] {
         return ExponentialDecay(
             {.initial_learning_rate = 0.1, .decay_steps = 2, .decay_rate = 0.5, .staircase = true});
       }},
      {"PiecewiseConstantDecay",
       [] {
         return PiecewiseConstantDecay({.boundaries = {1, 3}, .values = {0.1, 0.05, 0.01}});
       }},
      {"CosineDecay", [] { return CosineDecay({.initial_learning_rate = 0.1, .decay_steps = 5}); }},
      {"CosineDecay warm-up",
       [] {
         return CosineDecay({.initial_learning_rate = 0.0, .decay_steps = 5, .warmup_target = 0.1, .warmup_steps = 2});
       }},
  };
}

// One apply() traced with the gradient and every optimizer variable as graph inputs (gradient
// first); the outputs are the weight's and the optimizer variables' new values. The variables
// keep their eager values afterwards. A JitError from a host read fails the test, naming it.
jit::Graph trace_apply(Optimizer& optimizer, const Variable& weight, const std::string& what) {
  std::vector<Variable> state{weight};
  for (const Variable& v : optimizer.variables()) state.push_back(v);
  std::vector<Tensor> eager;
  for (const Variable& v : state) eager.push_back(v.value());

  jit::Graph graph;
  {
    jit::Trace trace;
    jit::TraceScope active(trace);
    const Tensor g = trace.input(weight.value().spec(), "gradient");
    for (const Variable& v : state) v.assign(trace.input(v.value().spec(), v.name()));
    try {
      optimizer.apply({g}, {weight});
    } catch (const JitError& e) {
      ADD_FAILURE() << what << ": apply() read a traced value on the host: " << e.what();
    }
    std::vector<Tensor> next;
    for (const Variable& v : state) next.push_back(v.value());
    graph = trace.finish(next);
  }
  for (std::size_t i = 0; i < state.size(); ++i) state[i].assign(eager[i]);
  return graph;
}

template <class MakeOptimizer>
void expect_compiled_steps_match_eager(MakeOptimizer make_optimizer) {
  for (const auto& [name, learning_rate] : learning_rates()) {
    auto eager = make_optimizer(learning_rate());
    auto compiled = make_optimizer(learning_rate());
    Variable w_eager = make_variable("w", {1.0f, -2.0f, 0.5f});
    Variable w_compiled = make_variable("w", {1.0f, -2.0f, 0.5f});
    eager->build({w_eager});
    compiled->build({w_compiled});

    const jit::Graph graph = trace_apply(*compiled, w_compiled, compiled->name() + " with " + name);
    if (::testing::Test::HasFailure()) return;
    jit::Executor executor(graph);
    // Several steps, so schedules move through their phases; the counter goes in as a tensor.
    for (int step = 0; step < 7; ++step) {
      const Tensor g = gradient({0.3 * (step + 1), -0.2, 0.1 * step});
      eager->apply({g}, {w_eager});

      std::vector<Variable> state{w_compiled};
      for (const Variable& v : compiled->variables()) state.push_back(v);
      std::vector<Tensor> inputs{g};
      for (const Variable& v : state) inputs.push_back(v.value());
      const std::vector<Tensor> next = executor.run(inputs);
      ASSERT_EQ(next.size(), state.size());
      for (std::size_t i = 0; i < state.size(); ++i) state[i].assign(next[i]);

      EXPECT_EQ(compiled->iterations(), eager->iterations()) << name;
      const std::vector<float> want = w_eager.value().to_vector<float>();
      const std::vector<float> got = w_compiled.value().to_vector<float>();
      for (std::size_t i = 0; i < want.size(); ++i) {
        EXPECT_NEAR(got[i], want[i], 1e-6 * (1.0 + std::abs(want[i])))
            << compiled->name() << " with " << name << ", step " << step << ", element " << i;
      }
    }
  }
}

TEST(TracedApply, SGDFollowsEveryScheduleCompiled) {
  expect_compiled_steps_match_eager(
      [](LearningRate lr) { return std::make_unique<SGD>(SGDOptions{.learning_rate = std::move(lr)}); });
}

TEST(TracedApply, SGDWithMomentumAndWeightDecayFollowsEveryScheduleCompiled) {
  expect_compiled_steps_match_eager([](LearningRate lr) {
    return std::make_unique<SGD>(SGDOptions{.learning_rate = std::move(lr), .momentum = 0.9, .weight_decay = 0.1});
  });
}

TEST(TracedApply, AdamFollowsEveryScheduleCompiled) {
  expect_compiled_steps_match_eager(
      [](LearningRate lr) { return std::make_unique<Adam>(AdamOptions{.learning_rate = std::move(lr)}); });
}

// Accumulation chooses between updating and carrying on without a host read: 7 calls of 3 cover
// two updates and a group left open, each compiled call equal to the eager one.
TEST(TracedApply, AdamWithGradientAccumulationFollowsEveryScheduleCompiled) {
  expect_compiled_steps_match_eager([](LearningRate lr) {
    return std::make_unique<Adam>(AdamOptions{.learning_rate = std::move(lr),
                                              .weight_decay = 0.01,
                                              .global_clipnorm = 0.5,
                                              .gradient_accumulation_steps = 3});
  });
}

TEST(TracedApply, SGDWithMomentumAndGradientAccumulationFollowsEveryScheduleCompiled) {
  expect_compiled_steps_match_eager([](LearningRate lr) {
    return std::make_unique<SGD>(
        SGDOptions{.learning_rate = std::move(lr), .momentum = 0.9, .gradient_accumulation_steps = 2});
  });
}

TEST(TracedApply, IterationsVariableIsTheStepCounter) {
  SGD sgd({.learning_rate = schedules::CosineDecay({.initial_learning_rate = 0.1, .decay_steps = 10})});
  const Variable& counter = sgd.iterations_variable();
  EXPECT_EQ(counter.value().spec(), (TensorSpec{Shape{}, DType::int64}));
  EXPECT_TRUE(counter.is_same(sgd.variables().front()));
  Variable w = make_variable("w", {1.0f});
  sgd.apply({gradient({1.0})}, {w});
  sgd.apply({gradient({1.0})}, {w});
  EXPECT_EQ(counter.value().item(), 2.0);
  EXPECT_EQ(sgd.iterations(), 2);
}

}  // namespace
}  // namespace kestrel::optimizers
