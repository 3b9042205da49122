#include "framework/optimizers/adam.h"

#include "framework/optimizers/option_checks.h"

#include <cmath>
#include <sstream>

#include "framework/core/error.h"
#include "framework/ops/elementwise.h"

namespace kestrel::optimizers {
Adam::Adam(AdamOptions options) : Adam("adam", std::move(options)) {}

Adam::Adam(std::string default_name, AdamOptions options)
    : Optimizer(std::move(default_name), detail::common_options(options)), options_(std::move(options)) {
  const AdamOptions& o = options_;
  detail::check_option(o.beta_1 >= 0.0 && o.beta_1 < 1.0, name(), "beta_1", "a number in [0, 1)", o.beta_1);
  detail::check_option(o.beta_2 >= 0.0 && o.beta_2 < 1.0, name(), "beta_2", "a number in [0, 1)", o.beta_2);
  detail::check_option(o.epsilon >= 0.0 && std::isfinite(o.epsilon), name(), "epsilon", "a finite number >= 0", o.epsilon);
  // variables() opens with the iteration count (the documented checkpoint layout).
  iteration_ = variables().front();
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
  // variable does not round beta_2^t to 1.
  const Tensor t = ops::cast(iteration_.value() + Tensor::scalar(1, DType::int64), DType::float32);
  const Tensor beta_1_power = ops::pow(Tensor::scalar(options_.beta_1), t);
  const Tensor beta_2_power = ops::pow(Tensor::scalar(options_.beta_2), t);
  const Tensor alpha = ops::cast(learning_rate * ops::sqrt(1.0 - beta_2_power) / (1.0 - beta_1_power), dtype);

  const Variable& m = momentums_[index];
  const Variable& v = velocities_[index];
  const Tensor m_next = m.value() + (g - m.value()) * (1.0 - options_.beta_1);
  Tensor v_next = v.value() + (ops::square(g) - v.value()) * (1.0 - options_.beta_2);
  m.assign(m_next);
  v.assign(v_next);
  if (options_.amsgrad) {
    const Variable& v_hat = velocity_hats_[index];
    v_next = ops::maximum(v_hat.value(), v_next);
    v_hat.assign(v_next);
  }
  variable.assign(variable.value() - m_next * alpha / (ops::sqrt(v_next) + options_.epsilon));
}

}  // namespace kestrel::optimizers
