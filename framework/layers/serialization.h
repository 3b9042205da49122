// Keras configs: Kestrel's objects as the JSON that Keras 3's serialize_keras_object writes, and back.
//
//   nlohmann::json dense = serialize_layer(layer);   // {"module": "keras.layers", "class_name": "Dense",
//                                                    //  "config": {...}, "registered_name": null,
//                                                    //  "build_config": {"input_shape": [null, 784]}}
//   std::unique_ptr<Layer> copy = deserialize_layer(dense);   // built, with fresh weights
//
// A layer's config (Layer::get_config) holds its constructor's options under Keras's key names;
// the building blocks those options are made of (initializers, activations, dtype policies) are
// serialized here. Reading is lenient where Keras is (a policy or initializer may be a bare string)
// and strict elsewhere: a missing key or a value of the wrong type is a ValueError naming the class
// and the key.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/layers/activations.h"
#include "framework/layers/dtype_policy.h"
#include "framework/layers/initializers.h"

namespace kestrel {

class Layer;

namespace serialization {

using Config = nlohmann::json;

/// {"module", "class_name", "config", "registered_name"}: an object as Keras 3 serializes it
/// (registered_name null unless given).
Config keras_object(const std::string& module, const std::string& class_name, Config config,
                    const std::optional<std::string>& registered_name = std::nullopt);

/// config[key] converted to T; a missing key or another type is a ValueError naming `what`.
template <class T>
T required(const Config& config, const std::string& key, const std::string& what);
/// config[key] converted to T, or `fallback` when absent or null.
template <class T>
T optional(const Config& config, const std::string& key, const T& fallback, const std::string& what);

/// config[key] as N ints: a Keras tuple option (kernel_size, strides, size), which Keras writes as a
/// list ([3, 3]) and takes as one int for all N too. `fallback` when absent or null; anything but
/// whole numbers is a ValueError naming `what` and the key.
template <std::size_t N>
std::array<int, N> int_tuple(const Config& config, const std::string& key, const std::array<int, N>& fallback,
                             const std::string& what);

/// config["padding"] ("valid" when absent): "valid" or "same", and "causal" when allow_causal.
/// Keras takes any case; another name is a ValueError naming `what` and the names allowed.
std::string padding_from_config(const Config& config, const std::string& what, bool allow_causal = false);

/// A layer's random seed as Keras writes it: the number, or null for none (the global random stream).
Config seed_to_config(const std::optional<std::uint64_t>& seed);
/// config["seed"]: none when absent or null; a negative or fractional seed is a ValueError naming `what`.
std::optional<std::uint64_t> seed_from_config(const Config& config, const std::string& what);

/// An option Keras has and Kestrel does not, which a config may hold only at the value Kestrel
/// behaves as (`kestrel_value`). Absent or equal passes; anything else is a ValueError naming
/// `what`, the key, the value and `fix`: a config's option is never silently dropped.
void check_unsupported(const Config& config, const std::string& key, const Config& kestrel_value,
                       const std::string& what, const std::string& fix);
/// For a class's from_config: throws ValueError naming `what` and the key for a key of `config`
/// outside `keys` (Kestrel would drop an option it does not know; Keras refuses it too).
void check_config_keys(const Config& config, const std::string& what, const std::vector<std::string_view>& keys);
/// check_unsupported for keys that must be null (absent) in Kestrel: regularizers, constraints and
/// the like; the fix is chosen from the key's name.
void check_null(const Config& config, std::initializer_list<const char*> keys, const std::string& what);
/// data_format may only be "channels_last": Kestrel's convolution, pooling and reshaping layers
/// take channels last.
void check_channels_last(const Config& config, const std::string& what);
/// Sets each key to null, as Keras writes an unset regularizer or constraint.
void put_null(Config& config, std::initializer_list<const char*> keys);

Config to_config(const Initializer& initializer);
/// From a Keras initializer object, or a bare name ("glorot_uniform").
Initializer initializer_from_config(const Config& config, const std::string& what);

/// A built-in activation's Keras name ("relu"; "linear" for none). A custom one is a ValueError:
/// Keras could not read it back either.
Config to_config(const ActivationFn& activation, const std::string& what);
ActivationFn activation_from_config(const Config& config, const std::string& what);

Config to_config(const DTypePolicy& policy);
/// From a DTypePolicy object or a bare name; null gives none (the global policy applies).
std::optional<DTypePolicy> dtype_policy_from_config(const Config& config, const std::string& what);

/// A shape with its batch dim as null: [null, 28, 28, 1].
Config batch_shape_to_config(const Shape& shape);
/// The shape from a Keras batch shape, the batch dim (null or a number) taken as `batch`.
Shape shape_from_config(const Config& config, std::int64_t batch, const std::string& what);

/// The keys of a layer with a kernel and a bias (Dense, the convolutions): activation, use_bias,
/// the two initializers, and their regularizers and constraints, which Kestrel lacks, as null.
template <class Options>
void put_kernel_options(Config& config, const Options& options, const std::string& what) {
  config["activation"] = to_config(options.activation, what);
  config["use_bias"] = options.use_bias;
  config["kernel_initializer"] = to_config(options.kernel_initializer);
  config["bias_initializer"] = to_config(options.bias_initializer);
  put_null(config, {"kernel_regularizer", "bias_regularizer", "kernel_constraint", "bias_constraint"});
}
/// Reads those keys into `options` (absent ones keep its defaults); a regularizer or constraint
/// is a ValueError.
template <class Options>
void read_kernel_options(const Config& config, Options& options, const std::string& what) {
  check_null(config, {"kernel_regularizer", "bias_regularizer", "kernel_constraint", "bias_constraint"}, what);
  if (config.contains("activation")) options.activation = activation_from_config(config.at("activation"), what);
  options.use_bias = optional<bool>(config, "use_bias", true, what);
  if (config.contains("kernel_initializer") && !config.at("kernel_initializer").is_null()) {
    options.kernel_initializer = initializer_from_config(config.at("kernel_initializer"), what);
  }
  if (config.contains("bias_initializer") && !config.at("bias_initializer").is_null()) {
    options.bias_initializer = initializer_from_config(config.at("bias_initializer"), what);
  }
}

/// What every layer's config holds: its name, trainable flag and dtype policy (and, as Keras
/// takes it for every layer, an activity_regularizer, which must be null).
struct LayerBase {
  std::string name;
  bool trainable = true;
  std::optional<DTypePolicy> dtype;
};
LayerBase layer_base_from_config(const Config& config, const std::string& what);

/// The layer as its Keras object, with its build_config when it is built.
Config serialize_layer(const Layer& layer);
/// A layer from its Keras object: by registered name, else by built-in class name. It is built
/// from its build_config when there is one. Unknown classes are a ValueError naming the class and
/// KESTREL_REGISTER_SERIALIZABLE.
std::unique_ptr<Layer> deserialize_layer(const Config& object);

}  // namespace serialization
}  // namespace kestrel
