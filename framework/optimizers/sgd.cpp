#include "framework/optimizers/sgd.h"

#include "framework/optimizers/option_checks.h"

#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/layers/serialization.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/fused_elementwise.h"

namespace kestrel::optimizers {
SGD::SGD(SGDOptions options) : Optimizer("SGD", detail::common_options(options)), options_(std::move(options)) {
  if (!(options_.momentum >= 0.0 && options_.momentum <= 1.0)) {
    std::ostringstream message;
    message << "optimizer '" << name() << "': momentum must be a number in [0, 1], got " << options_.momentum;
    throw ValueError(message.str());
  }
}

nlohmann::json SGD::get_config() const {
  nlohmann::json config = Optimizer::get_config();
  config["momentum"] = options_.momentum;
  config["nesterov"] = options_.nesterov;
  return config;
}

SGD SGD::from_config(const nlohmann::json& config) {
  using serialization::optional;
  const std::string what = "optimizer class 'SGD'";
  SGDOptions o = detail::options_from_config<SGDOptions>(config, what, {"momentum", "nesterov"});
  o.momentum = optional<double>(config, "momentum", o.momentum, what);
  o.nesterov = optional<bool>(config, "nesterov", o.nesterov, what);
  return SGD(std::move(o));
}

void SGD::build_slots(const std::vector<Variable>& variables) {
  if (options_.momentum == 0.0) return;  // plain SGD keeps no state, as in Keras
  momentums_.reserve(variables.size());
  for (const Variable& v : variables) momentums_.push_back(add_slot(v, "momentum"));
}

void SGD::update_step(const Tensor& gradient, const Variable& variable, std::size_t index,
                      const Tensor& learning_rate) {
  // One pass over memory per updated tensor; each program does the float32 ops of the formulas
  // in sgd.h in the same order, so it rounds exactly as those ops run one by one would.
  const Tensor g = ops::cast(gradient, variable.dtype());
  const Tensor lr = ops::cast(learning_rate, variable.dtype());
  if (momentums_.empty()) {
    const ElementwiseProgram& descend = program("variable", [] {
      ElementwiseBuilder b;
      auto var = b.input(0), grad = b.input(1), rate = b.input(2);
      return b.build(var - grad * rate);
    });
    variable.assign(ops::fused_elementwise(descend, {variable.value(), g, lr}));
    return;
  }
  const ElementwiseProgram& momentum = program("momentum", [&] {
    ElementwiseBuilder b;
    auto m = b.input(0), grad = b.input(1), rate = b.input(2);
    return b.build(m * options_.momentum - grad * rate);
  });
  const Variable& m = momentums_[index];
  const Tensor m_next = ops::fused_elementwise(momentum, {m.value(), g, lr});
  m.assign(m_next);
  if (!options_.nesterov) {
    variable.assign(variable.value() + m_next);
    return;
  }
  // Nesterov looks ahead along the new velocity: var += momentum * m - lr * g.
  const ElementwiseProgram& look_ahead = program("nesterov", [&] {
    ElementwiseBuilder b;
    auto var = b.input(0), m_new = b.input(1), grad = b.input(2), rate = b.input(3);
    return b.build(var + (m_new * options_.momentum - grad * rate));
  });
  variable.assign(ops::fused_elementwise(look_ahead, {variable.value(), m_next, g, lr}));
}

}  // namespace kestrel::optimizers
