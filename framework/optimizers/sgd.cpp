#include "framework/optimizers/sgd.h"

#include "framework/optimizers/option_checks.h"

#include <cmath>
#include <sstream>

#include "framework/core/error.h"
#include "framework/ops/elementwise.h"

namespace kestrel::optimizers {
SGD::SGD(SGDOptions options) : Optimizer("SGD", detail::common_options(options)), options_(std::move(options)) {
  if (!(options_.momentum >= 0.0 && options_.momentum <= 1.0)) {
    std::ostringstream message;
    message << "optimizer '" << name() << "': momentum must be a number in [0, 1], got " << options_.momentum;
    throw ValueError(message.str());
  }
}

void SGD::build_slots(const std::vector<Variable>& variables) {
  if (options_.momentum == 0.0) return;  // plain SGD keeps no state, as in Keras
  momentums_.reserve(variables.size());
  for (const Variable& v : variables) momentums_.push_back(add_slot(v, "momentum"));
}

void SGD::update_step(const Tensor& gradient, const Variable& variable, std::size_t index,
                      const Tensor& learning_rate) {
  const Tensor g = ops::cast(gradient, variable.dtype());
  const Tensor lr_g = g * ops::cast(learning_rate, variable.dtype());
  if (momentums_.empty()) {
    variable.assign(variable.value() - lr_g);
    return;
  }
  const Variable& m = momentums_[index];
  const Tensor m_next = m.value() * options_.momentum - lr_g;
  m.assign(m_next);
  // Nesterov looks ahead along the new velocity: var += momentum * m - lr * g.
  variable.assign(options_.nesterov ? variable.value() + (m_next * options_.momentum - lr_g)
                                    : variable.value() + m_next);
}

}  // namespace kestrel::optimizers
