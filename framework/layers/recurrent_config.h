// The config keys LSTM and GRU share, as Keras 3's RNN layers write them: the cell's activations,
// initializers and bias, the RNN wrapper's return_sequences / go_backwards / unroll, and the
// options Kestrel lacks (dropout, state, masking), which a config may hold only at their defaults.
// Only lstm.cpp and gru.cpp include it.
#pragma once

#include <string>

#include "framework/layers/serialization.h"

namespace kestrel::layers::detail {

/// Adds the shared keys of `options` (an LSTMOptions or GRUOptions) to `config`.
template <class Options>
void put_recurrent_options(serialization::Config& config, const Options& options, const std::string& what) {
  using serialization::to_config;
  config["activation"] = to_config(options.activation, what);
  config["recurrent_activation"] = to_config(options.recurrent_activation, what);
  config["use_bias"] = options.use_bias;
  config["kernel_initializer"] = to_config(options.kernel_initializer);
  config["recurrent_initializer"] = to_config(options.recurrent_initializer);
  config["bias_initializer"] = to_config(options.bias_initializer);
  serialization::put_null(config,
                          {"kernel_regularizer", "recurrent_regularizer", "bias_regularizer", "activity_regularizer",
                           "kernel_constraint", "recurrent_constraint", "bias_constraint", "seed"});
  config["dropout"] = 0.0;
  config["recurrent_dropout"] = 0.0;
  config["return_sequences"] = options.return_sequences;
  config["return_state"] = false;
  config["go_backwards"] = options.go_backwards;
  config["stateful"] = false;
  config["unroll"] = options.unroll;
  config["zero_output_for_mask"] = false;
}

/// Reads the shared keys into `options`, refusing the options Kestrel lacks at other values.
template <class Options>
void read_recurrent_options(const serialization::Config& config, Options& options, const std::string& what) {
  using serialization::optional;
  serialization::check_null(config,
                            {"kernel_regularizer", "recurrent_regularizer", "bias_regularizer", "activity_regularizer",
                             "kernel_constraint", "recurrent_constraint", "bias_constraint"},
                            what);
  const std::string fix = "Kestrel's recurrent layers have no dropout, state or masking; save the layer without it";
  serialization::check_unsupported(config, "dropout", 0.0, what, fix);
  serialization::check_unsupported(config, "recurrent_dropout", 0.0, what, fix);
  serialization::check_unsupported(config, "return_state", false, what, fix);
  serialization::check_unsupported(config, "stateful", false, what, fix);
  const auto read_initializer = [&](const char* key, Initializer& out) {
    if (config.contains(key) && !config.at(key).is_null())
      out = serialization::initializer_from_config(config.at(key), what);
  };
  if (config.contains("activation"))
    options.activation = serialization::activation_from_config(config.at("activation"), what);
  if (config.contains("recurrent_activation")) {
    options.recurrent_activation = serialization::activation_from_config(config.at("recurrent_activation"), what);
  }
  options.use_bias = optional<bool>(config, "use_bias", true, what);
  read_initializer("kernel_initializer", options.kernel_initializer);
  read_initializer("recurrent_initializer", options.recurrent_initializer);
  read_initializer("bias_initializer", options.bias_initializer);
  options.return_sequences = optional<bool>(config, "return_sequences", false, what);
  options.go_backwards = optional<bool>(config, "go_backwards", false, what);
  options.unroll = optional<bool>(config, "unroll", false, what);
}

}  // namespace kestrel::layers::detail
