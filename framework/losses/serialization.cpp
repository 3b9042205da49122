// Reading Keras configs of losses (keras/src/losses/loss.py, get_config): the reduction names,
// and the key checks the losses' and metrics' from_config share.
#include "framework/losses/serialization.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/layers/serialization.h"

namespace kestrel::losses {
namespace {

// A value as the Python literal a Keras user would pass (None, False), for messages.
std::string python_literal(const nlohmann::json& value) {
  if (value.is_null()) return "None";
  if (value.is_boolean()) return value.get<bool>() ? "True" : "False";
  return value.dump();
}

}  // namespace

std::string reduction_name(Reduction reduction) {
  switch (reduction) {
    case Reduction::sum_over_batch_size: return "sum_over_batch_size";
    case Reduction::sum: return "sum";
    case Reduction::none: return "none";
  }
  return "sum_over_batch_size";
}

Reduction reduction_from_config(const nlohmann::json& value, const std::string& what) {
  if (value.is_null()) return Reduction::none;  // Keras's reduction=None
  if (value.is_string()) {
    const std::string name = value.get<std::string>();
    // Keras's reduce_values divides by the element count for "mean" just as for sum_over_batch_size.
    if (name == "sum_over_batch_size" || name == "mean") return Reduction::sum_over_batch_size;
    if (name == "sum") return Reduction::sum;
    if (name == "none") return Reduction::none;
    if (name == "mean_with_sample_weight") {
      throw ValueError(what + ": reduction is \"mean_with_sample_weight\" in the config, but Kestrel's losses do not " +
                       "divide by the sum of the sample weights; use \"sum_over_batch_size\", \"sum\" or \"none\"");
    }
  }
  throw ValueError(what + ": reduction is " + value.dump() +
                   " in the config; it must be \"sum_over_batch_size\", \"mean\", \"sum\", \"none\" or null");
}

void check_builtin_object(const nlohmann::json& object, const std::string& class_name, const std::string& who) {
  // Keras writes null for its public classes, and the class's own name for some others.
  if (!object.contains("registered_name") || !object.at("registered_name").is_string()) return;
  const std::string registered = object.at("registered_name").get<std::string>();
  if (registered == class_name) return;
  throw ValueError(op_message(who, "'" + class_name + "' is registered as '" + registered +
                                       "', a class of its user's own; Kestrel makes only its built-in classes"));
}

void check_lacking_option(const nlohmann::json& config, const std::string& what, const std::string& key,
                          const nlohmann::json& harmless, const std::string& lacking) {
  if (!config.contains(key)) return;
  const nlohmann::json& value = config.at(key);
  if (value.is_null() || value == harmless) return;
  throw ValueError(what + ": " + key + " is " + value.dump() + " in the config, but " + lacking + "; save it with " +
                   key + "=" + python_literal(harmless) + " to read it in Kestrel");
}

LossBase loss_base_from_config(const nlohmann::json& config, const std::string& what,
                               const std::vector<std::string_view>& own_keys, LossBase defaults) {
  std::vector<std::string_view> keys = {"name", "reduction"};
  keys.insert(keys.end(), own_keys.begin(), own_keys.end());
  serialization::check_config_keys(config, what, keys);
  return {.name = serialization::optional<std::string>(config, "name", defaults.name, what),
          .reduction =
              config.contains("reduction") ? reduction_from_config(config.at("reduction"), what) : defaults.reduction};
}

}  // namespace kestrel::losses
