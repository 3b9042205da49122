// Shared by the optimizers' constructors and from_config (internal): option validation, the
// common options, and reading them from a Keras config.
#pragma once

#include <initializer_list>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

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

/// The common options from a Keras optimizer config, `defaults` where a key is absent (null is
/// "none" for the optional ones). Checks that every key is the base's or one of `own_keys`, and
/// that the options Kestrel lacks (use_ema, loss_scale_factor) hold values that change nothing.
CommonOptions common_options_from_config(const nlohmann::json& config, const std::string& what,
                                         std::initializer_list<std::string_view> own_keys, CommonOptions defaults);

/// Options with the common fields read from `config` (see common_options_from_config) and the
/// class's own fields at their defaults, for from_config to fill in.
template <class Options>
Options options_from_config(const nlohmann::json& config, const std::string& what,
                            std::initializer_list<std::string_view> own_keys) {
  Options o;
  CommonOptions c = common_options_from_config(config, what, own_keys, common_options(o));
  o.learning_rate = std::move(c.learning_rate);
  // AdamW always decays: a null weight_decay (Keras's None) decays by nothing.
  if constexpr (std::is_same_v<decltype(o.weight_decay), double>) {
    o.weight_decay = c.weight_decay.value_or(0.0);
  } else {
    o.weight_decay = c.weight_decay;
  }
  o.clipnorm = c.clipnorm;
  o.clipvalue = c.clipvalue;
  o.global_clipnorm = c.global_clipnorm;
  o.gradient_accumulation_steps = c.gradient_accumulation_steps;
  o.name = std::move(c.name);
  return o;
}

}  // namespace kestrel::optimizers::detail
