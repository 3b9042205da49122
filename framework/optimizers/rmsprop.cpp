#include "framework/optimizers/rmsprop.h"

#include "framework/optimizers/option_checks.h"

#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/layers/serialization.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/fused_elementwise.h"

namespace kestrel::optimizers {
RMSprop::RMSprop(RMSpropOptions options)
    : Optimizer("rmsprop", detail::common_options(options)), options_(std::move(options)) {
  const RMSpropOptions& o = options_;
  detail::check_option(o.rho >= 0.0 && o.rho < 1.0, name(), "rho", "a number in [0, 1)", o.rho);
  detail::check_option(o.momentum >= 0.0 && o.momentum <= 1.0, name(), "momentum", "a number in [0, 1]", o.momentum);
  detail::check_option(o.epsilon >= 0.0 && std::isfinite(o.epsilon), name(), "epsilon", "a finite number >= 0",
                       o.epsilon);
}

nlohmann::json RMSprop::get_config() const {
  nlohmann::json config = Optimizer::get_config();
  config["rho"] = options_.rho;
  config["momentum"] = options_.momentum;
  config["epsilon"] = options_.epsilon;
  config["centered"] = options_.centered;
  return config;
}

RMSprop RMSprop::from_config(const nlohmann::json& config) {
  using serialization::optional;
  const std::string what = "optimizer class 'RMSprop'";
  RMSpropOptions o =
      detail::options_from_config<RMSpropOptions>(config, what, {"rho", "momentum", "epsilon", "centered"});
  o.rho = optional<double>(config, "rho", o.rho, what);
  o.momentum = optional<double>(config, "momentum", o.momentum, what);
  o.epsilon = optional<double>(config, "epsilon", o.epsilon, what);
  o.centered = optional<bool>(config, "centered", o.centered, what);
  return RMSprop(std::move(o));
}

void RMSprop::build_slots(const std::vector<Variable>& variables) {
  for (const Variable& v : variables) velocities_.push_back(add_slot(v, "velocity"));
  if (options_.momentum > 0.0) {
    for (const Variable& v : variables) momentums_.push_back(add_slot(v, "momentum"));
  }
  if (options_.centered) {
    for (const Variable& v : variables) average_gradients_.push_back(add_slot(v, "average_gradient"));
  }
}

void RMSprop::update_step(const Tensor& gradient, const Variable& variable, std::size_t index,
                          const Tensor& learning_rate) {
  // One pass over memory per updated tensor; each program does the float32 ops of the formulas
  // in rmsprop.h in the same order, so it rounds exactly as those ops run one by one would.
  const double rho = options_.rho;
  const Tensor g = ops::cast(gradient, variable.dtype());
  const Tensor lr = ops::cast(learning_rate, variable.dtype());
  // Running averages: input 0 is the slot, input 1 the gradient.
  const ElementwiseProgram& velocity = program("velocity", [&] {
    ElementwiseBuilder b;
    auto v = b.input(0), grad = b.input(1);
    return b.build(v * rho + b.square(grad) * (1.0 - rho));
  });
  const Variable& v = velocities_[index];
  const Tensor v_next = ops::fused_elementwise(velocity, {v.value(), g});
  v.assign(v_next);
  // The increment lr * g / sqrt(denominator) reads inputs 1 (g), 2 (v), 3 (lr) and, centered, 4 (a).
  std::vector<Tensor> inputs = {Tensor(), g, v_next, lr};
  if (options_.centered) {
    // v - a^2 estimates the gradient's variance rather than its raw second moment.
    const ElementwiseProgram& average = program("average_gradient", [&] {
      ElementwiseBuilder b;
      auto a = b.input(0), grad = b.input(1);
      return b.build(a * rho + grad * (1.0 - rho));
    });
    const Variable& a = average_gradients_[index];
    const Tensor a_next = ops::fused_elementwise(average, {a.value(), g});
    a.assign(a_next);
    inputs.push_back(a_next);
  }
  auto increment = [&](ElementwiseBuilder& b) {
    auto grad = b.input(1), v_new = b.input(2), rate = b.input(3);
    auto denominator = options_.centered ? v_new - b.square(b.input(4)) + options_.epsilon : v_new + options_.epsilon;
    return grad * rate / b.sqrt(denominator);
  };
  if (momentums_.empty()) {
    const ElementwiseProgram& descend = program("variable", [&] {
      ElementwiseBuilder b;
      auto var = b.input(0);
      return b.build(var - increment(b));
    });
    inputs[0] = variable.value();
    variable.assign(ops::fused_elementwise(descend, inputs));
    return;
  }
  const ElementwiseProgram& momentum = program("momentum", [&] {
    ElementwiseBuilder b;
    auto m = b.input(0);
    return b.build(m * options_.momentum + increment(b));
  });
  const Variable& m = momentums_[index];
  inputs[0] = m.value();
  const Tensor m_next = ops::fused_elementwise(momentum, inputs);
  m.assign(m_next);
  variable.assign(variable.value() - m_next);
}

}  // namespace kestrel::optimizers
