#include "framework/layers/gru.h"

#include <utility>

#include "framework/layers/recurrent_config.h"

namespace kestrel::layers {

GRU::GRU(std::int64_t units, GRUOptions options) : RecurrentLayer("GRU", units, std::move(options)) {}

nlohmann::json GRU::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["units"] = units_;
  detail::put_recurrent_options(config, options_, error_prefix());
  config["reset_after"] = options_.reset_after;
  return config;
}

GRU GRU::from_config(const nlohmann::json& config) {
  const std::string what = "layer class 'GRU'";
  const serialization::LayerBase base = serialization::layer_base_from_config(config, what);
  GRUOptions options{.name = base.name, .dtype = base.dtype};
  detail::read_recurrent_options(config, options, what);
  options.reset_after = serialization::optional<bool>(config, "reset_after", true, what);
  return GRU(serialization::required<std::int64_t>(config, "units", what), std::move(options));
}

}  // namespace kestrel::layers
