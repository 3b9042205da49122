#include "framework/optimizers/adamw.h"

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
          .name = o.name};
}

}  // namespace

// The base class validates weight_decay (finite, >= 0) and applies the decay before each update.
AdamW::AdamW(AdamWOptions options) : Adam("adamw", as_adam(options)) {}

}  // namespace kestrel::optimizers
