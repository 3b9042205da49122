#include "framework/layers/lstm.h"

#include <utility>

#include "framework/layers/recurrent_config.h"

namespace kestrel::layers {

LSTM::LSTM(std::int64_t units, LSTMOptions options) : RecurrentLayer("LSTM", units, std::move(options)) {}

nlohmann::json LSTM::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["units"] = units_;
  detail::put_recurrent_options(config, options_, error_prefix());
  config["unit_forget_bias"] = options_.unit_forget_bias;
  return config;
}

LSTM LSTM::from_config(const nlohmann::json& config) {
  const std::string what = "layer class 'LSTM'";
  const serialization::LayerBase base = serialization::layer_base_from_config(config, what);
  LSTMOptions options{.name = base.name, .dtype = base.dtype};
  detail::read_recurrent_options(config, options, what);
  options.unit_forget_bias = serialization::optional<bool>(config, "unit_forget_bias", true, what);
  return LSTM(serialization::required<std::int64_t>(config, "units", what), std::move(options));
}

}  // namespace kestrel::layers
