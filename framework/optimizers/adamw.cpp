#include "framework/optimizers/adamw.h"

#include <nlohmann/json.hpp>

#include "framework/layers/serialization.h"
#include "framework/optimizers/option_checks.h"

namespace kestrel::optimizers {
namespace {

AdamOptions as_adam(const AdamWOptions& o) {
  return {.learning_rate = o.learning_rate,
          .beta_1 = o.beta_1,
          .beta_2 = o.beta_2,
          .epsilon = o.epsilon,
          .amsgrad = o.amsgrad,
          .weight_decay = o.weight_decay,
          .clipnorm = o.clipnorm,
          .clipvalue = o.clipvalue,
          .global_clipnorm = o.global_clipnorm,
          .gradient_accumulation_steps = o.gradient_accumulation_steps,
          .name = o.name};
}

}  // namespace

// The base class validates weight_decay (finite, >= 0) and applies the decay before each update.
AdamW::AdamW(AdamWOptions options) : Adam("adamw", as_adam(options)) {}

AdamW AdamW::from_config(const nlohmann::json& config) {
  using serialization::optional;
  const std::string what = "optimizer class 'AdamW'";
  AdamWOptions o = detail::options_from_config<AdamWOptions>(config, what, {"beta_1", "beta_2", "epsilon", "amsgrad"});
  o.beta_1 = optional<double>(config, "beta_1", o.beta_1, what);
  o.beta_2 = optional<double>(config, "beta_2", o.beta_2, what);
  o.epsilon = optional<double>(config, "epsilon", o.epsilon, what);
  o.amsgrad = optional<bool>(config, "amsgrad", o.amsgrad, what);
  return AdamW(std::move(o));
}

}  // namespace kestrel::optimizers
