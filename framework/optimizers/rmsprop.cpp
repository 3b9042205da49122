#include "framework/optimizers/rmsprop.h"

#include "framework/optimizers/option_checks.h"

#include <cmath>
#include <sstream>

#include "framework/core/error.h"
#include "framework/ops/elementwise.h"

namespace kestrel::optimizers {
RMSprop::RMSprop(RMSpropOptions options) : Optimizer("rmsprop", detail::common_options(options)), options_(std::move(options)) {
  const RMSpropOptions& o = options_;
  detail::check_option(o.rho >= 0.0 && o.rho < 1.0, name(), "rho", "a number in [0, 1)", o.rho);
  detail::check_option(o.momentum >= 0.0 && o.momentum <= 1.0, name(), "momentum", "a number in [0, 1]", o.momentum);
  detail::check_option(o.epsilon >= 0.0 && std::isfinite(o.epsilon), name(), "epsilon", "a finite number >= 0", o.epsilon);
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
  const double rho = options_.rho;
  const Tensor g = ops::cast(gradient, variable.dtype());
  const Tensor lr = ops::cast(learning_rate, variable.dtype());

  const Variable& v = velocities_[index];
  const Tensor v_next = v.value() * rho + ops::square(g) * (1.0 - rho);
  v.assign(v_next);
  Tensor denominator;
  if (options_.centered) {
    // v - a^2 estimates the gradient's variance rather than its raw second moment.
    const Variable& a = average_gradients_[index];
    const Tensor a_next = a.value() * rho + g * (1.0 - rho);
    a.assign(a_next);
    denominator = v_next - ops::square(a_next) + options_.epsilon;
  } else {
    denominator = v_next + options_.epsilon;
  }
  const Tensor increment = g * lr / ops::sqrt(denominator);
  if (momentums_.empty()) {
    variable.assign(variable.value() - increment);
    return;
  }
  const Variable& m = momentums_[index];
  const Tensor m_next = m.value() * options_.momentum + increment;
  m.assign(m_next);
  variable.assign(variable.value() - m_next);
}

}  // namespace kestrel::optimizers
