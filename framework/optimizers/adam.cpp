#include "framework/optimizers/adam.h"

#include "framework/optimizers/option_checks.h"

#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/layers/serialization.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/fused_elementwise.h"

namespace kestrel::optimizers {
Adam::Adam(AdamOptions options) : Adam("adam", std::move(options)) {}

Adam::Adam(std::string default_name, AdamOptions options)
    : Optimizer(std::move(default_name), detail::common_options(options)), options_(std::move(options)) {
  const AdamOptions& o = options_;
  detail::check_option(o.beta_1 >= 0.0 && o.beta_1 < 1.0, name(), "beta_1", "a number in [0, 1)", o.beta_1);
  detail::check_option(o.beta_2 >= 0.0 && o.beta_2 < 1.0, name(), "beta_2", "a number in [0, 1)", o.beta_2);
  detail::check_option(o.epsilon >= 0.0 && std::isfinite(o.epsilon), name(), "epsilon", "a finite number >= 0",
                       o.epsilon);
}

nlohmann::json Adam::get_config() const {
  nlohmann::json config = Optimizer::get_config();
  config["beta_1"] = options_.beta_1;
  config["beta_2"] = options_.beta_2;
  config["epsilon"] = options_.epsilon;
  config["amsgrad"] = options_.amsgrad;
  return config;
}

Adam Adam::from_config(const nlohmann::json& config) {
  using serialization::optional;
  const std::string what = "optimizer class 'Adam'";
  AdamOptions o = detail::options_from_config<AdamOptions>(config, what, {"beta_1", "beta_2", "epsilon", "amsgrad"});
  o.beta_1 = optional<double>(config, "beta_1", o.beta_1, what);
  o.beta_2 = optional<double>(config, "beta_2", o.beta_2, what);
  o.epsilon = optional<double>(config, "epsilon", o.epsilon, what);
  o.amsgrad = optional<bool>(config, "amsgrad", o.amsgrad, what);
  return Adam(std::move(o));
}

void Adam::build_slots(const std::vector<Variable>& variables) {
  momentums_.reserve(variables.size());
  velocities_.reserve(variables.size());
  for (const Variable& v : variables) {
    momentums_.push_back(add_slot(v, "momentum"));
    velocities_.push_back(add_slot(v, "velocity"));
  }
  if (options_.amsgrad) {
    velocity_hats_.reserve(variables.size());
    for (const Variable& v : variables) velocity_hats_.push_back(add_slot(v, "velocity_hat"));
  }
}

void Adam::update_step(const Tensor& gradient, const Variable& variable, std::size_t index,
                       const Tensor& learning_rate) {
  const DType dtype = variable.dtype();
  const Tensor g = ops::cast(gradient, dtype);

  // The scalar bias correction is computed in float32 (the learning rate's dtype), so a bfloat16
  // variable does not round beta_2^t to 1; once per step, as it is the same for every variable.
  const Tensor& alpha_f32 = per_step("alpha", [&] {
    const Tensor t = ops::cast(applied_steps() + Tensor::scalar(1, DType::int64), DType::float32);
    const Tensor beta_1_power = ops::pow(Tensor::scalar(options_.beta_1), t);
    const Tensor beta_2_power = ops::pow(Tensor::scalar(options_.beta_2), t);
    return learning_rate * ops::sqrt(1.0 - beta_2_power) / (1.0 - beta_1_power);
  });
  const Tensor alpha = ops::cast(alpha_f32, dtype);

  // Each update is one pass over memory; the programs do the float32 ops of the formulas in
  // adam.h in the same order, so they round exactly as those ops run one by one would.
  const ElementwiseProgram& momentum = program("momentum", [&] {
    ElementwiseBuilder b;
    auto m = b.input(0), grad = b.input(1);
    return b.build(m + (grad - m) * (1.0 - options_.beta_1));
  });
  const ElementwiseProgram& velocity = program("velocity", [&] {
    ElementwiseBuilder b;
    auto v = b.input(0), grad = b.input(1);
    return b.build(v + (b.square(grad) - v) * (1.0 - options_.beta_2));
  });
  const ElementwiseProgram& step = program("variable", [&] {
    ElementwiseBuilder b;
    auto var = b.input(0), m = b.input(1), v = b.input(2), rate = b.input(3);
    return b.build(var - m * rate / (b.sqrt(v) + options_.epsilon));
  });

  const Variable& m = momentums_[index];
  const Variable& v = velocities_[index];
  const Tensor m_next = ops::fused_elementwise(momentum, {m.value(), g});
  Tensor v_next = ops::fused_elementwise(velocity, {v.value(), g});
  m.assign(m_next);
  v.assign(v_next);
  if (options_.amsgrad) {
    const Variable& v_hat = velocity_hats_[index];
    v_next = ops::maximum(v_hat.value(), v_next);
    v_hat.assign(v_next);
  }
  variable.assign(ops::fused_elementwise(step, {variable.value(), m_next, v_next, alpha}));
}

}  // namespace kestrel::optimizers
