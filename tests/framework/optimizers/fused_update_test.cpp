// The optimizers' fused updates (ops::fused_elementwise) against the same updates written as one
// public op per line, as they were before fusion: equal bit for bit, variables and slots, over
// several steps and variables of several sizes (one of them large enough for both threads).
// The large one has a multiple of 16 elements: the standalone sqrt then splits its work where
// Eigen takes its vector path on both sides (see fused_elementwise.h), as it does for the MLP's
// weights.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "framework/core/random.h"
#include "framework/ops/elementwise.h"
#include "framework/optimizers/adam.h"
#include "framework/optimizers/adamw.h"
#include "framework/optimizers/rmsprop.h"
#include "framework/optimizers/sgd.h"

namespace kestrel::optimizers {
namespace {

const std::vector<Shape> kShapes = {{300, 256}, {257}, {5}};
constexpr int kSteps = 4;

std::vector<std::uint32_t> bits(const Tensor& t) {
  std::vector<std::uint32_t> out;
  for (float f : t.to_vector<float>()) out.push_back(std::bit_cast<std::uint32_t>(f));
  return out;
}

Tensor gradient_for(int step, std::size_t variable) {
  return random::uniform(kShapes[variable], random::Key(100 + 10 * step + variable), -0.5, 0.5);
}

// One model's worth of state for the reference updates: variables, then named slots.
struct State {
  std::vector<Tensor> vars;
  std::vector<std::vector<Tensor>> slots;  // slots[k][variable]

  explicit State(int num_slots) : slots(static_cast<std::size_t>(num_slots)) {
    for (std::size_t i = 0; i < kShapes.size(); ++i) {
      vars.push_back(random::normal(kShapes[i], random::Key(i), 0.0, 0.1));
      for (auto& slot : slots) slot.push_back(Tensor::zeros(kShapes[i]));
    }
  }
};

std::vector<Variable> make_variables() {
  std::vector<Variable> out;
  State initial(0);
  for (std::size_t i = 0; i < kShapes.size(); ++i) {
    std::string name = "w";
    name += std::to_string(i);
    out.emplace_back(name, initial.vars[i]);
  }
  return out;
}

// The decoupled weight decay, as the base class wrote it op by op.
Tensor decayed(const Tensor& var, const Tensor& lr, double weight_decay) {
  if (weight_decay <= 0.0) return var;
  Tensor decay = ops::multiply(lr, ops::scalar_like(var, weight_decay));
  return ops::subtract(var, ops::multiply(var, decay));
}

void adam_reference(State& s, int step, const AdamOptions& o, double weight_decay) {
  const Tensor lr = Tensor::scalar(o.learning_rate.at(0));
  const Tensor t = ops::cast(Tensor::scalar(step, DType::int64) + Tensor::scalar(1, DType::int64), DType::float32);
  const Tensor beta_1_power = ops::pow(Tensor::scalar(o.beta_1), t);
  const Tensor beta_2_power = ops::pow(Tensor::scalar(o.beta_2), t);
  const Tensor alpha = lr * ops::sqrt(1.0 - beta_2_power) / (1.0 - beta_1_power);
  for (std::size_t i = 0; i < s.vars.size(); ++i) {
    const Tensor g = gradient_for(step, i);
    Tensor& m = s.slots[0][i];
    Tensor& v = s.slots[1][i];
    m = m + (g - m) * (1.0 - o.beta_1);
    v = v + (ops::square(g) - v) * (1.0 - o.beta_2);
    Tensor v_used = v;
    if (o.amsgrad) v_used = s.slots[2][i] = ops::maximum(s.slots[2][i], v);
    const Tensor var = decayed(s.vars[i], lr, weight_decay);
    s.vars[i] = var - m * alpha / (ops::sqrt(v_used) + o.epsilon);
  }
}

void sgd_reference(State& s, int step, const SGDOptions& o, double weight_decay) {
  const Tensor lr = Tensor::scalar(o.learning_rate.at(0));
  for (std::size_t i = 0; i < s.vars.size(); ++i) {
    const Tensor g = gradient_for(step, i);
    const Tensor var = decayed(s.vars[i], lr, weight_decay);
    const Tensor lr_g = g * lr;
    if (o.momentum == 0.0) {
      s.vars[i] = var - lr_g;
      continue;
    }
    Tensor& m = s.slots[0][i];
    m = m * o.momentum - lr_g;
    s.vars[i] = o.nesterov ? var + (m * o.momentum - lr_g) : var + m;
  }
}

void rmsprop_reference(State& s, int step, const RMSpropOptions& o, double weight_decay) {
  const Tensor lr = Tensor::scalar(o.learning_rate.at(0));
  for (std::size_t i = 0; i < s.vars.size(); ++i) {
    const Tensor g = gradient_for(step, i);
    const Tensor var = decayed(s.vars[i], lr, weight_decay);
    Tensor& v = s.slots[0][i];
    v = v * o.rho + ops::square(g) * (1.0 - o.rho);
    Tensor denominator = v + o.epsilon;
    if (o.centered) {
      Tensor& a = s.slots[2][i];
      a = a * o.rho + g * (1.0 - o.rho);
      denominator = v - ops::square(a) + o.epsilon;
    }
    const Tensor increment = g * lr / ops::sqrt(denominator);
    if (o.momentum == 0.0) {
      s.vars[i] = var - increment;
      continue;
    }
    Tensor& m = s.slots[1][i];
    m = m * o.momentum + increment;
    s.vars[i] = var - m;
  }
}

// The reference's slots in the optimizer's order (its variables() after the iteration count
// and the learning rate).
using SlotOrder = std::function<std::vector<Tensor>(const State&)>;

SlotOrder slot_by_slot(std::vector<std::size_t> kinds) {
  return [kinds](const State& s) {
    std::vector<Tensor> out;
    for (std::size_t k : kinds) out.insert(out.end(), s.slots[k].begin(), s.slots[k].end());
    return out;
  };
}

// Adam creates (momentum, velocity) for each variable in turn, then every velocity_hat.
SlotOrder adam_order(bool amsgrad) {
  return [amsgrad](const State& s) {
    std::vector<Tensor> out;
    for (std::size_t i = 0; i < s.vars.size(); ++i) {
      out.push_back(s.slots[0][i]);
      out.push_back(s.slots[1][i]);
    }
    if (amsgrad) out.insert(out.end(), s.slots[2].begin(), s.slots[2].end());
    return out;
  };
}

// Runs the optimizer and the reference side by side and compares every variable after every
// step, then every slot.
void expect_bitwise_equal(Optimizer& optimizer, int num_slots, const std::function<void(State&, int)>& reference,
                          const SlotOrder& slot_order) {
  std::vector<Variable> variables = make_variables();
  State want(num_slots);
  for (int step = 0; step < kSteps; ++step) {
    std::vector<Tensor> grads;
    for (std::size_t i = 0; i < variables.size(); ++i) grads.push_back(gradient_for(step, i));
    optimizer.apply(grads, variables);
    reference(want, step);
    for (std::size_t i = 0; i < variables.size(); ++i) {
      ASSERT_EQ(bits(variables[i].value()), bits(want.vars[i])) << optimizer.name() << " step " << step << " w" << i;
    }
  }
  std::vector<Variable> got = optimizer.variables();
  std::vector<Tensor> slots = slot_order(want);
  ASSERT_EQ(got.size(), slots.size() + 2) << optimizer.name();
  for (std::size_t k = 0; k < slots.size(); ++k) {
    EXPECT_EQ(bits(got[k + 2].value()), bits(slots[k])) << optimizer.name() << " " << got[k + 2].name();
  }
}

TEST(FusedUpdate, AdamEqualsOpByOp) {
  AdamOptions o{.learning_rate = 0.01, .beta_1 = 0.8, .beta_2 = 0.95, .epsilon = 1e-3};
  Adam adam(o);
  expect_bitwise_equal(
      adam, 2, [&](State& s, int step) { adam_reference(s, step, o, 0.0); }, adam_order(false));
}

TEST(FusedUpdate, AdamDefaultsWithAmsgradEqualOpByOp) {
  AdamOptions o{.amsgrad = true};
  Adam adam(o);
  expect_bitwise_equal(
      adam, 3, [&](State& s, int step) { adam_reference(s, step, o, 0.0); }, adam_order(true));
}

TEST(FusedUpdate, AdamWEqualsOpByOp) {
  AdamW adamw({.learning_rate = 0.003, .weight_decay = 0.05});
  AdamOptions o{.learning_rate = 0.003, .epsilon = 1e-7};
  expect_bitwise_equal(
      adamw, 2, [&](State& s, int step) { adam_reference(s, step, o, 0.05); }, adam_order(false));
}

TEST(FusedUpdate, SGDEqualsOpByOp) {
  for (SGDOptions o : {SGDOptions{.learning_rate = 0.1}, SGDOptions{.learning_rate = 0.1, .momentum = 0.9},
                       SGDOptions{.learning_rate = 0.05, .momentum = 0.8, .nesterov = true, .weight_decay = 0.01}}) {
    SGD sgd(o);
    const double decay = o.weight_decay.value_or(0.0);
    const bool momentum = o.momentum > 0.0;
    expect_bitwise_equal(
        sgd, 1, [&](State& s, int step) { sgd_reference(s, step, o, decay); },
        slot_by_slot(momentum ? std::vector<std::size_t>{0} : std::vector<std::size_t>{}));
  }
}

TEST(FusedUpdate, RMSpropEqualsOpByOp) {
  for (RMSpropOptions o :
       {RMSpropOptions{.learning_rate = 0.01}, RMSpropOptions{.learning_rate = 0.01, .momentum = 0.9},
        RMSpropOptions{.learning_rate = 0.02, .rho = 0.8, .momentum = 0.5, .centered = true},
        RMSpropOptions{.learning_rate = 0.02, .centered = true, .weight_decay = 0.1}}) {
    RMSprop rmsprop(o);
    const double decay = o.weight_decay.value_or(0.0);
    // Slot kinds 0 velocity, 1 momentum, 2 average_gradient, created in that order when used.
    std::vector<std::size_t> kinds = {0};
    if (o.momentum > 0.0) kinds.push_back(1);
    if (o.centered) kinds.push_back(2);
    expect_bitwise_equal(
        rmsprop, 3, [&](State& s, int step) { rmsprop_reference(s, step, o, decay); }, slot_by_slot(kinds));
  }
}

}  // namespace
}  // namespace kestrel::optimizers
