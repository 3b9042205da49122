#include "framework/saving/keras2_model_config.h"

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/logging/logging.h"

namespace kestrel::saving::keras2 {
namespace {

using Config = nlohmann::json;

bool is_model_class(const std::string& class_name) {
  return class_name == "Sequential" || class_name == "Functional" || class_name == "Model";
}

/// {"class_name", "config"} for a Keras 3 object: a registered class goes by its registered name,
/// as Keras's legacy serializer writes it.
Config legacy_object(const Config& object) {
  if (!object.is_object() || !object.contains("class_name")) return object;  // a name, or null
  const Config& registered = object.value("registered_name", Config());
  return {{"class_name", registered.is_string() ? registered : object.at("class_name")},
          {"config", object.value("config", Config::object())}};
}

Config legacy_layer(const Config& object) {
  Config out = legacy_object(object);
  // A Functional model's layers carry their calls beside their config.
  for (const char* key : {"name", "inbound_nodes"}) {
    if (object.contains(key)) out[key] = object.at(key);
  }
  Config& config = out["config"];
  if (is_model_class(object.at("class_name").get<std::string>()) && config.contains("layers")) {
    for (Config& layer : config.at("layers")) layer = legacy_layer(layer);
  }
  return out;
}

/// "my_package>MyLayer" names a registered class: Keras 3's registered_name, class MyLayer.
/// tf.keras 2 wrote its own optimizers as "Custom>Adam".
void split_registered_name(Config& object) {
  const std::string class_name = object.at("class_name").get<std::string>();
  const std::size_t mark = class_name.rfind('>');
  if (mark == std::string::npos) return;
  object["registered_name"] = class_name;
  object["class_name"] = class_name.substr(mark + 1);
}

/// The batch_input_shape tf.keras 2 wrote into a layer's config (not an InputLayer's, which
/// reads it as its batch_shape): the input shape of a Sequential model's first layer.
Config declared_input_shape(const Config& object) {
  const Config& config = object.at("config");
  if (object.at("class_name") == "InputLayer" || !config.is_object()) return Config();
  return config.value("batch_input_shape", Config());
}

/// One layer's config from tf.keras 2 in the form Keras 3 reads (as Keras 3's model_from_config
/// converts it).
void keras3_layer_config(Config& config, const std::string& class_name) {
  if (!config.is_object()) return;
  if (class_name != "InputLayer") config.erase("batch_input_shape");
  // tf.keras 2 kept a normalization axis as a list once built: [3] is axis 3.
  if (config.contains("axis") && config.at("axis").is_array() && config.at("axis").size() == 1) {
    config["axis"] = config.at("axis").at(0);
  }
  // tf.keras 2 wrote every layer's activity_regularizer, which Keras 3 reads as an option of
  // every layer; a null one is the default (deserialize_layer refuses any other).
  if (config.contains("activity_regularizer") && config.at("activity_regularizer").is_null()) {
    config.erase("activity_regularizer");
  }
}

Config keras3_layer(const Config& legacy, const std::string& what) {
  if (!legacy.is_object() || !legacy.contains("class_name") || !legacy.at("class_name").is_string() ||
      !legacy.contains("config")) {
    throw ValueError(what + ": a layer's config must be an object with \"class_name\" and \"config\", got " +
                     legacy.dump().substr(0, 200));
  }
  Config object = legacy;
  split_registered_name(object);
  std::string class_name = object.at("class_name").get<std::string>();
  if (class_name == "Model") object["class_name"] = class_name = "Functional";  // tf.keras before 2.4
  Config& config = object.at("config");
  if (class_name == "Sequential" && config.is_array()) {
    throw ValueError(what +
                     ": the Sequential model's config is a bare list of layers, as Keras before 2.2 wrote "
                     "it; load the file in Keras and save it again");
  }
  keras3_layer_config(config, class_name);
  if (is_model_class(class_name) && config.contains("layers")) {
    Config& layers = config.at("layers");
    for (std::size_t i = 0; i < layers.size(); ++i) {
      Config converted = keras3_layer(layers.at(i), what);
      // A Sequential without an InputLayer takes its input shape from its first layer's
      // batch_input_shape (Keras 3 makes the InputLayer from it).
      const Config declared = declared_input_shape(layers.at(i));
      if (class_name == "Sequential" && i == 0 && !declared.is_null() && !config.contains("build_input_shape")) {
        config["build_input_shape"] = declared;
      }
      layers.at(i) = std::move(converted);
    }
  }
  return object;
}

/// A tf.keras 2 optimizer config read as Keras 3's.
Config keras3_optimizer(const Config& legacy, const std::string& what) {
  if (!legacy.is_object()) return legacy;  // a bare name
  Config object = legacy;
  if (object.contains("class_name") && object.at("class_name").is_string()) {
    // tf.keras 2.11+ registered its optimizers as "Custom>Adam": built-in classes all the same.
    const std::string class_name = object.at("class_name").get<std::string>();
    if (class_name.rfind("Custom>", 0) == 0) object["class_name"] = class_name.substr(7);
  }
  if (!object.contains("config") || !object.at("config").is_object()) return object;
  Config& config = object.at("config");
  if (config.value("is_legacy_optimizer", false)) {
    throw ValueError(what + ": the optimizer was saved as tf.keras's legacy " + object.value("class_name", "") +
                     " (is_legacy_optimizer), whose options differ from Keras 3's; compile with a current optimizer "
                     "(not tf.keras.optimizers.legacy) and save again");
  }
  config.erase("is_legacy_optimizer");
  // tf.keras 2's switch for compiling its own update step with XLA: Kestrel compiles the whole
  // step as compile()'s jit_compile says, so the key changes nothing here.
  if (config.contains("jit_compile")) {
    logging::get("kestrel.saving")
        ->debug("{}: the optimizer's jit_compile ({}) is tf.keras 2's own; compile() decides", what,
                config.at("jit_compile").dump());
    config.erase("jit_compile");
  }
  return object;
}

Config keras3_loss(const Config& legacy) {
  Config object = legacy;
  // tf.keras 2's "auto" reduction is a mean over the batch wherever a model's loss runs.
  if (object.is_object() && object.contains("config") && object.at("config").is_object() &&
      object.at("config").value("reduction", "") == "auto") {
    object["config"]["reduction"] = "sum_over_batch_size";
  }
  return object;
}

/// A metric as tf.keras 2 wrote it: compile's "accuracy" became {"class_name":
/// "MeanMetricWrapper", "config": {"name": "accuracy", "fn": "sparse_categorical_accuracy"}}.
Config keras3_metric(const Config& legacy, const std::string& what) {
  if (!legacy.is_object() || legacy.value("class_name", "") != "MeanMetricWrapper") return legacy;
  const Config& config = legacy.value("config", Config::object());
  const std::string name = config.value("name", "");
  if (name == "accuracy" || name == "acc") return name;  // resolved against the loss, as compile does
  if (config.contains("fn") && config.at("fn").is_string()) return config.at("fn");
  throw ValueError(what + ": metric '" + name + "' wraps a function that is not saved by name (" +
                   config.value("fn", Config()).dump() + "); compile with a built-in metric and save again");
}

/// `convert` applied to each loss or metric of a compile option, whatever its structure: one,
/// a list, or per output (a dict by output name, or a list of lists in output order). A Keras
/// object is a dict too, but has a class_name, and is converted whole.
template <class Convert>
Config map_compile_entries(const Config& value, const Convert& convert) {
  if (value.is_array()) {
    Config out = Config::array();
    for (const Config& entry : value) out.push_back(map_compile_entries(entry, convert));
    return out;
  }
  if (value.is_object() && !value.contains("class_name")) {
    Config out = Config::object();
    for (const auto& [output, entry] : value.items()) out[output] = map_compile_entries(entry, convert);
    return out;
  }
  return convert(value);
}

}  // namespace

Config model_config_from_keras3(const Config& model_object) {
  Config out = legacy_layer(model_object);
  out.erase("name");
  out.erase("inbound_nodes");
  // Keras rebuilds Sequential and Functional models from their layers; a subclassed model needs
  // the input shape it was built for, which Keras's reader passes over.
  if (!is_model_class(model_object.at("class_name").get<std::string>()) && model_object.contains("build_config")) {
    out["build_config"] = model_object.at("build_config");
  }
  return out;
}

Config training_config_from_keras3(const Config& compile_config) {
  Config out = compile_config;
  out.erase("optimizer");
  out["optimizer_config"] = legacy_object(compile_config.at("optimizer"));
  for (const char* key : {"loss", "metrics", "weighted_metrics"}) {
    out[key] = map_compile_entries(compile_config.value(key, Config()), legacy_object);
  }
  return out;
}

Config keras3_model_object(const Config& model_config, const std::string& what) {
  Config object = keras3_layer(model_config, what + ", model_config");
  if (model_config.contains("build_config")) object["build_config"] = model_config.at("build_config");
  return object;
}

Config keras3_compile_config(const Config& training_config, const std::string& what) {
  const std::string where = what + ", training_config";
  if (!training_config.is_object() || !training_config.contains("optimizer_config")) {
    throw ValueError(where + ": it has no optimizer_config; Keras writes one for every compiled model");
  }
  Config out = training_config;
  out.erase("optimizer_config");
  out["optimizer"] = keras3_optimizer(training_config.at("optimizer_config"), where);
  // Per output, tf.keras 2 wrote a dict by output name, or lists in output order (its metrics
  // always, one list per output): compile_options_from_config places them by the model's outputs.
  if (out.contains("loss")) out["loss"] = map_compile_entries(out.at("loss"), keras3_loss);
  for (const char* key : {"metrics", "weighted_metrics"}) {
    if (out.contains(key)) {
      out[key] = map_compile_entries(out.at(key), [&](const Config& metric) { return keras3_metric(metric, where); });
    }
  }
  return out;
}

}  // namespace kestrel::saving::keras2
