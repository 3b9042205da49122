// What every metric's Keras config holds (keras/src/metrics/metric.py, get_config): its name and
// dtype.
#include "framework/metrics/serialization.h"

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/layers/serialization.h"
#include "framework/losses/serialization.h"

namespace kestrel::metrics {

nlohmann::json Metric::get_config() const { return {{"name", name_}, {"dtype", "float32"}}; }

std::string metric_name_from_config(const nlohmann::json& config, const std::string& what,
                                    const std::vector<std::string_view>& own_keys, const std::string& default_name) {
  std::vector<std::string_view> keys = {"name", "dtype"};
  keys.insert(keys.end(), own_keys.begin(), own_keys.end());
  serialization::check_config_keys(config, what, keys);
  if (config.contains("dtype") && !config.at("dtype").is_null() && config.at("dtype") != "float32") {
    throw ValueError(what + ": dtype is " + config.at("dtype").dump() +
                     " in the config, but Kestrel's metrics compute in float32 under every policy; save the " +
                     "metric with dtype=\"float32\" (or None)");
  }
  return serialization::optional<std::string>(config, "name", default_name, what);
}

}  // namespace kestrel::metrics
