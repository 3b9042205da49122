// Shared by the optimizers' constructors (internal): option validation and the common options.
#pragma once

#include <sstream>
#include <string>

#include "framework/core/error.h"
#include "framework/optimizers/optimizer.h"

namespace kestrel::optimizers::detail {

/// Throws ValueError "optimizer 'adam': beta_1 must be <rule>, got <value>" unless ok.
inline void check_option(bool ok, const std::string& optimizer, const char* option, const char* rule, double value) {
  if (ok) return;
  std::ostringstream message;
  message << "optimizer '" << optimizer << "': " << option << " must be " << rule << ", got " << value;
  throw ValueError(message.str());
}

/// The fields every optimizer's options repeat, as the base class takes them.
template <class Options>
CommonOptions common_options(const Options& o) {
  return {o.learning_rate, o.weight_decay, o.clipnorm, o.clipvalue, o.global_clipnorm, o.gradient_accumulation_steps,
          o.name};
}

}  // namespace kestrel::optimizers::detail
