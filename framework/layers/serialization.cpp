#include "framework/layers/serialization.h"

#include <array>
#include <cctype>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/layers/layer.h"
#include "framework/layers/layer_classes.h"

namespace kestrel::serialization {
namespace {

// "glorot_uniform" -> "GlorotUniform": Keras's initializer class for a name.
std::string to_pascal_case(const std::string& snake) {
  std::string out;
  bool upper = true;
  for (const char c : snake) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out;
}

std::string type_name(const Config& value) { return value.is_null() ? "null" : value.type_name(); }

// An initializer made from its Keras class and its arguments.
Initializer initializer_of_class(const std::string& class_name, const Config& arguments, const std::string& what) {
  const std::string where = what + ", initializer " + class_name;
  if (class_name == "Constant") return initializers::Constant(optional<double>(arguments, "value", 0.0, where));
  if (class_name == "RandomNormal" || class_name == "TruncatedNormal") {
    const initializers::RandomNormalOptions o{.mean = optional<double>(arguments, "mean", 0.0, where),
                                              .stddev = optional<double>(arguments, "stddev", 0.05, where)};
    return class_name == "RandomNormal" ? initializers::RandomNormal(o) : initializers::TruncatedNormal(o);
  }
  if (class_name == "RandomUniform") {
    return initializers::RandomUniform({.minval = optional<double>(arguments, "minval", -0.05, where),
                                        .maxval = optional<double>(arguments, "maxval", 0.05, where)});
  }
  // The rest take no numbers: Kestrel knows them by their snake_case name.
  std::string snake;
  for (std::size_t i = 0; i < class_name.size(); ++i) {
    const auto c = static_cast<unsigned char>(class_name[i]);
    if (std::isupper(c) && i > 0) snake += '_';
    snake += static_cast<char>(std::tolower(c));
  }
  try {
    return Initializer(snake);
  } catch (const ValueError& e) {
    throw ValueError(what + ": unknown initializer class '" + class_name + "' (" + e.what() + ")");
  }
}

// A layer made with its class's default constructor must have the config it was read from, but
// for the base keys (restored separately): else its class has options only a from_config can read.
void require_default_config(const Layer& layer, const Config& config, const std::string& what) {
  Config made = layer.get_config();
  Config read = config;
  for (const char* key : {"name", "trainable", "dtype"}) {
    made.erase(key);
    read.erase(key);
  }
  if (made == read) return;
  throw ValueError(what + " has no from_config, and its default constructor makes " + made.dump() +
                   " where the config holds " + read.dump() + "; give the class static " + layer.class_name() +
                   " from_config(const nlohmann::json& config)");
}

}  // namespace

Config keras_object(const std::string& module, const std::string& class_name, Config config,
                    const std::optional<std::string>& registered_name) {
  return {{"module", module},
          {"class_name", class_name},
          {"config", std::move(config)},
          {"registered_name", registered_name ? Config(*registered_name) : Config(nullptr)}};
}

template <class T>
T required(const Config& config, const std::string& key, const std::string& what) {
  if (!config.is_object() || !config.contains(key)) {
    throw ValueError(what + ": the config has no '" + key + "'; a config written by get_config() holds it");
  }
  try {
    return config.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw ValueError(what + ": '" + key + "' in the config is " + type_name(config.at(key)) + " " +
                     config.at(key).dump() + ", which does not fit this option");
  }
}

template <class T>
T optional(const Config& config, const std::string& key, const T& fallback, const std::string& what) {
  if (!config.is_object() || !config.contains(key) || config.at(key).is_null()) return fallback;
  return required<T>(config, key, what);
}

template bool required<bool>(const Config&, const std::string&, const std::string&);
template int required<int>(const Config&, const std::string&, const std::string&);
template std::int64_t required<std::int64_t>(const Config&, const std::string&, const std::string&);
template double required<double>(const Config&, const std::string&, const std::string&);
template std::string required<std::string>(const Config&, const std::string&, const std::string&);
template std::vector<int> required<std::vector<int>>(const Config&, const std::string&, const std::string&);
template std::vector<std::int64_t> required<std::vector<std::int64_t>>(const Config&, const std::string&,
                                                                       const std::string&);
template Config required<Config>(const Config&, const std::string&, const std::string&);
template bool optional<bool>(const Config&, const std::string&, const bool&, const std::string&);
template int optional<int>(const Config&, const std::string&, const int&, const std::string&);
template std::int64_t optional<std::int64_t>(const Config&, const std::string&, const std::int64_t&,
                                             const std::string&);
template double optional<double>(const Config&, const std::string&, const double&, const std::string&);
template std::string optional<std::string>(const Config&, const std::string&, const std::string&, const std::string&);

template <std::size_t N>
std::array<int, N> int_tuple(const Config& config, const std::string& key, const std::array<int, N>& fallback,
                             const std::string& what) {
  if (!config.is_object() || !config.contains(key) || config.at(key).is_null()) return fallback;
  const Config& value = config.at(key);
  std::array<int, N> out{};
  if (value.is_number_integer()) {
    out.fill(value.get<int>());
    return out;
  }
  bool fits = value.is_array() && value.size() == N;
  for (std::size_t i = 0; fits && i < N; ++i) {
    fits = value[i].is_number_integer();
    if (fits) out[i] = value[i].get<int>();
  }
  if (!fits) {
    throw ValueError(what + ": '" + key + "' in the config is " + type_name(value) + " " + value.dump() +
                     "; it must be a whole number or a list of " + std::to_string(N) + " of them");
  }
  return out;
}

template std::array<int, 1> int_tuple<1>(const Config&, const std::string&, const std::array<int, 1>&,
                                         const std::string&);
template std::array<int, 2> int_tuple<2>(const Config&, const std::string&, const std::array<int, 2>&,
                                         const std::string&);

std::string padding_from_config(const Config& config, const std::string& what, bool allow_causal) {
  std::string padding = optional<std::string>(config, "padding", "valid", what);
  for (char& c : padding) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (padding == "valid" || padding == "same" || (allow_causal && padding == "causal")) return padding;
  throw ValueError(what + ": 'padding' in the config is " + config.at("padding").dump() + "; expected " +
                   (allow_causal ? "\"valid\", \"same\" or \"causal\"" : "\"valid\" or \"same\""));
}

Config seed_to_config(const std::optional<std::uint64_t>& seed) { return seed ? Config(*seed) : Config(nullptr); }

std::optional<std::uint64_t> seed_from_config(const Config& config, const std::string& what) {
  if (!config.is_object() || !config.contains("seed") || config.at("seed").is_null()) return std::nullopt;
  const Config& seed = config.at("seed");
  if (!seed.is_number_integer() || seed.get<std::int64_t>() < 0) {
    throw ValueError(what + ": 'seed' in the config is " + type_name(seed) + " " + seed.dump() +
                     "; it must be a whole number, 0 or more, or null to draw from the global random stream");
  }
  return seed.get<std::uint64_t>();
}

void check_unsupported(const Config& config, const std::string& key, const Config& kestrel_value,
                       const std::string& what, const std::string& fix) {
  if (!config.is_object() || !config.contains(key)) return;
  const Config& value = config.at(key);
  if (value == kestrel_value) return;
  throw ValueError(what + ": '" + key + "' is " + value.dump() + ", which Kestrel does not support; " + fix);
}

void check_config_keys(const Config& config, const std::string& what, const std::vector<std::string_view>& keys) {
  if (!config.is_object()) {
    throw ValueError(what + ": the config must be a JSON object of options, got " + config.dump());
  }
  for (const auto& [key, value] : config.items()) {
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
    std::string known;
    for (std::string_view k : keys) known += (known.empty() ? "" : ", ") + std::string(k);
    throw ValueError(what + ": the config has '" + key + "' (" + value.dump() +
                     "), which Kestrel does not know and would drop; the keys it reads are " + known);
  }
}

void check_null(const Config& config, std::initializer_list<const char*> keys, const std::string& what) {
  for (const char* key : keys) {
    const std::string name = key;
    const auto ends_with = [&name](const std::string& end) {
      return name.size() >= end.size() && name.compare(name.size() - end.size(), end.size(), end) == 0;
    };
    std::string fix = "Kestrel has no such option: set it to null";
    if (ends_with("_regularizer")) {
      fix = "Kestrel has no regularizers: add the penalty to the loss yourself, and set '" + name + "' to null";
    } else if (ends_with("_constraint")) {
      fix = "Kestrel has no weight constraints: set '" + name + "' to null";
    }
    check_unsupported(config, name, nullptr, what, fix);
  }
}

void check_channels_last(const Config& config, const std::string& what) {
  // null is Keras's default, the backend's image_data_format(): channels last unless configured.
  if (config.is_object() && config.contains("data_format") && config.at("data_format").is_null()) return;
  check_unsupported(config, "data_format", "channels_last", what,
                    "Kestrel's layers take channels last: transpose the inputs to channels last (layers::Permute) "
                    "and set 'data_format' to \"channels_last\"");
}

void put_null(Config& config, std::initializer_list<const char*> keys) {
  for (const char* key : keys) config[key] = nullptr;
}

Config to_config(const Initializer& initializer) {
  Config arguments = Config::object();
  for (const auto& [key, value] : initializer.arguments()) arguments[key] = value;
  const std::string class_name = to_pascal_case(initializer.name());
  // Keras's random initializers carry a seed; Kestrel's draw from the global stream, as seed=None does.
  if (class_name != "Zeros" && class_name != "Ones" && class_name != "Constant") arguments["seed"] = nullptr;
  return keras_object("keras.initializers", class_name, std::move(arguments));
}

Initializer initializer_from_config(const Config& config, const std::string& what) {
  if (config.is_string()) {
    const std::string name = config.get<std::string>();
    // A bare name: Keras accepts both "glorot_uniform" and "GlorotUniform".
    return initializer_of_class(name.find('_') != std::string::npos || std::islower(static_cast<unsigned char>(name[0]))
                                    ? to_pascal_case(name)
                                    : name,
                                Config::object(), what);
  }
  return initializer_of_class(required<std::string>(config, "class_name", what),
                              config.contains("config") ? config.at("config") : Config::object(), what);
}

Config to_config(const ActivationFn& activation, const std::string& what) {
  const std::string name = activation.is_linear() ? "linear" : activation.name();
  const std::vector<std::string> known = activations::names();
  if (std::find(known.begin(), known.end(), name) == known.end()) {
    throw ValueError(what + ": the custom activation '" + name +
                     "' has no config; use a built-in one, or wrap it in a registered Layer subclass");
  }
  return name;
}

ActivationFn activation_from_config(const Config& config, const std::string& what) {
  if (config.is_null()) return {};
  // Keras writes a built-in activation as its name; older files wrap it as {"class_name": "relu"}.
  const std::string name =
      config.is_string() ? config.get<std::string>() : required<std::string>(config, "class_name", what);
  try {
    return ActivationFn(name);
  } catch (const ValueError& e) {
    throw ValueError(what + ": " + e.what());
  }
}

Config to_config(const DTypePolicy& policy) { return keras_object("keras", "DTypePolicy", {{"name", policy.name()}}); }

std::optional<DTypePolicy> dtype_policy_from_config(const Config& config, const std::string& what) {
  if (config.is_null()) return std::nullopt;
  const std::string name = config.is_string()
                               ? config.get<std::string>()
                               : required<std::string>(required<Config>(config, "config", what), "name", what);
  // An integer or bool "policy" is a layer's input dtype (an InputLayer of token ids), which no
  // Kestrel layer casts to: the layer keeps the policy it would have had.
  if (name == "int32" || name == "int64" || name == "bool") return std::nullopt;
  try {
    return DTypePolicy(name);
  } catch (const ValueError& e) {
    throw ValueError(what + ": " + e.what());
  }
}

Config batch_shape_to_config(const Shape& shape) {
  Config out = Config::array();
  out.push_back(nullptr);
  for (int d = 1; d < shape.rank(); ++d) out.push_back(shape[d]);
  return out;
}

Shape shape_from_config(const Config& config, std::int64_t batch, const std::string& what) {
  if (!config.is_array() || config.empty()) {
    throw ValueError(what + ": a shape must be a list whose first entry is the batch dim, got " + config.dump());
  }
  std::vector<std::int64_t> dims{batch};
  for (std::size_t d = 1; d < config.size(); ++d) {
    if (!config[d].is_number_integer() || config[d].get<std::int64_t>() < 1) {
      throw ValueError(what + ": every dim of a shape but the batch dim must be a positive number, got " +
                       config.dump());
    }
    dims.push_back(config[d].get<std::int64_t>());
  }
  return Shape(dims);
}

LayerBase layer_base_from_config(const Config& config, const std::string& what) {
  // Keras takes an activity_regularizer for every layer; Kestrel has none to apply.
  check_null(config, {"activity_regularizer"}, what);
  return {.name = optional<std::string>(config, "name", "", what),
          .trainable = optional<bool>(config, "trainable", true, what),
          .dtype = config.contains("dtype") ? dtype_policy_from_config(config.at("dtype"), what) : std::nullopt};
}

Config serialize_layer(const Layer& layer) {
  const LayerClass* c = find_layer_class(std::type_index(typeid(layer)));
  if (c == nullptr) {
    throw ValueError(layer.error_prefix() +
                     "its C++ class is not registered, so it has no config to save; add "
                     "KESTREL_REGISTER_SERIALIZABLE(\"your_package\", YourClass) after the class's definition");
  }
  Config object = keras_object(c->package, c->class_name, layer.get_config(), c->registered_name);
  const std::vector<Shape>& shapes = layer.build_input_shapes();
  if (!shapes.empty()) {
    Config input_shape;
    if (layer.built_for_list()) {
      input_shape = Config::array();
      for (const Shape& s : shapes) input_shape.push_back(batch_shape_to_config(s));
    } else {
      input_shape = batch_shape_to_config(shapes.front());
    }
    object["build_config"] = {{"input_shape", std::move(input_shape)}};
  }
  return object;
}

std::unique_ptr<Layer> deserialize_layer(const Config& object) {
  const std::string class_name = required<std::string>(object, "class_name", "a layer's config");
  const std::string what = "layer class '" + class_name + "'";
  const std::string registered = object.contains("registered_name") && object.at("registered_name").is_string()
                                     ? object.at("registered_name").get<std::string>()
                                     : "";
  const LayerClass* c = registered.empty() ? nullptr : find_registered_layer_class(registered);
  if (c == nullptr) c = find_builtin_layer_class(class_name);
  if (c == nullptr) {
    throw ValueError("unknown " + what + (registered.empty() ? "" : " (registered as '" + registered + "')") +
                     ": Kestrel has no built-in layer of that name; if it is your own class, register it with "
                     "KESTREL_REGISTER_SERIALIZABLE(\"package\", " +
                     class_name + ") in a file of your program");
  }
  if (!c->from_config) {
    throw ValueError(what + " has options in its config but no from_config to read them; give it static " + class_name +
                     " from_config(const nlohmann::json& config)");
  }
  const Config config = object.contains("config") ? object.at("config") : Config::object();
  std::unique_ptr<Layer> layer = c->from_config(config);
  // The base config applies whatever the class's from_config read of it.
  const LayerBase base = layer_base_from_config(config, what);
  if (!base.name.empty()) layer->name_ = base.name;
  if (base.dtype && !layer->built()) {
    layer->dtype_policy_ = *base.dtype;
    layer->dtype_policy_given_ = true;
  }
  layer->set_trainable(base.trainable);
  if (c->default_constructed) require_default_config(*layer, config, what);
  if (object.contains("build_config") && object.at("build_config").contains("input_shape") &&
      !object.at("build_config").at("input_shape").is_null()) {
    const Config& input_shape = object.at("build_config").at("input_shape");
    // One shape is a list of dims ([null, 784]); a list layer's is a list of such lists.
    if (!input_shape.empty() && input_shape.at(0).is_array()) {
      std::vector<Shape> shapes;
      for (const Config& s : input_shape) shapes.push_back(shape_from_config(s, 1, what));
      layer->maybe_build(shapes);
    } else {
      layer->maybe_build(shape_from_config(input_shape, 1, what));
    }
  }
  return layer;
}

}  // namespace kestrel::serialization
