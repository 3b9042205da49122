// Reading the options every Keras optimizer config holds (keras/src/optimizers/base_optimizer.py,
// get_config), for the classes' from_config.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/layers/serialization.h"
#include "framework/optimizers/option_checks.h"
#include "framework/optimizers/serialization.h"

namespace kestrel::optimizers::detail {
namespace {

using serialization::Config;

// The keys of Keras's base Optimizer.get_config, in its order.
constexpr std::string_view kBaseKeys[] = {"name",
                                          "learning_rate",
                                          "weight_decay",
                                          "clipnorm",
                                          "global_clipnorm",
                                          "clipvalue",
                                          "use_ema",
                                          "ema_momentum",
                                          "ema_overwrite_frequency",
                                          "loss_scale_factor",
                                          "gradient_accumulation_steps"};

// An option that may be none: absent keeps `fallback`, null is none.
template <class T>
std::optional<T> nullable(const Config& config, const std::string& key, const std::optional<T>& fallback,
                          const std::string& what) {
  if (!config.contains(key)) return fallback;
  if (config.at(key).is_null()) return std::nullopt;
  return serialization::required<T>(config, key, what);
}

LearningRate learning_rate_from_config(const Config& config, const LearningRate& fallback, const std::string& what) {
  if (!config.contains("learning_rate")) return fallback;
  const Config& value = config.at("learning_rate");
  // A schedule is its own Keras object; Keras writes a constant rate as a number.
  if (value.is_object()) return LearningRate(schedules::deserialize(value));
  if (!value.is_number()) {
    throw ValueError(what + ": 'learning_rate' in the config is " + value.dump() +
                     "; it must be a number or a learning-rate schedule's Keras object");
  }
  return value.get<double>();
}

}  // namespace

CommonOptions common_options_from_config(const nlohmann::json& config, const std::string& what,
                                         std::initializer_list<std::string_view> own_keys, CommonOptions defaults) {
  using serialization::optional;
  std::vector<std::string_view> keys(std::begin(kBaseKeys), std::end(kBaseKeys));
  keys.insert(keys.end(), own_keys.begin(), own_keys.end());
  serialization::check_config_keys(config, what, keys);
  // Keras reads ema_momentum and ema_overwrite_frequency only with use_ema, so off they change nothing.
  if (optional<bool>(config, "use_ema", false, what)) {
    throw ValueError(what + ": use_ema is true in the config, but Kestrel's optimizers keep no moving average of " +
                     "the weights; save the model with use_ema=False to train it on in Kestrel");
  }
  const double loss_scale_factor = optional<double>(config, "loss_scale_factor", 1.0, what);
  if (loss_scale_factor != 1.0) {
    throw ValueError(what + ": loss_scale_factor is " + config.at("loss_scale_factor").dump() +
                     " in the config, but Kestrel's optimizers do not scale the loss (bfloat16 needs no loss " +
                     "scaling); save the model with loss_scale_factor=None");
  }
  return {.learning_rate = learning_rate_from_config(config, defaults.learning_rate, what),
          .weight_decay = nullable<double>(config, "weight_decay", defaults.weight_decay, what),
          .clipnorm = nullable<double>(config, "clipnorm", defaults.clipnorm, what),
          .clipvalue = nullable<double>(config, "clipvalue", defaults.clipvalue, what),
          .global_clipnorm = nullable<double>(config, "global_clipnorm", defaults.global_clipnorm, what),
          .gradient_accumulation_steps =
              nullable<int>(config, "gradient_accumulation_steps", defaults.gradient_accumulation_steps, what),
          .name = optional<std::string>(config, "name", defaults.name, what)};
}

}  // namespace kestrel::optimizers::detail
