// Optimizers and schedules by Keras name: optimizers::get ("adam" in compile()), and the Keras
// objects of a compile config (serialize, deserialize; framework/optimizers/serialization.h).
#include <cctype>
#include <functional>
#include <memory>
#include <string>
#include <typeindex>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/layers/serialization.h"
#include "framework/optimizers/adam.h"
#include "framework/optimizers/adamw.h"
#include "framework/optimizers/rmsprop.h"
#include "framework/optimizers/schedules.h"
#include "framework/optimizers/serialization.h"
#include "framework/optimizers/sgd.h"

namespace kestrel::optimizers {
namespace {

using serialization::Config;

/// A class Kestrel reads and writes under Keras's name: found by name (in any case, as Keras
/// finds optimizers) to read a config, by C++ type to write one.
template <class Base>
struct KerasClass {
  std::string class_name;
  std::type_index type;
  std::function<std::shared_ptr<Base>(const Config& config)> from_config;
};

template <class Base, class T>
KerasClass<Base> keras_class(std::string class_name) {
  return {std::move(class_name), std::type_index(typeid(T)),
          [](const Config& config) -> std::shared_ptr<Base> { return std::make_shared<T>(T::from_config(config)); }};
}

const std::vector<KerasClass<Optimizer>>& optimizer_classes() {
  static const std::vector<KerasClass<Optimizer>> table = {
      keras_class<Optimizer, SGD>("SGD"),
      keras_class<Optimizer, Adam>("Adam"),
      keras_class<Optimizer, AdamW>("AdamW"),
      keras_class<Optimizer, RMSprop>("RMSprop"),
  };
  return table;
}

const std::vector<KerasClass<LearningRateSchedule>>& schedule_classes() {
  static const std::vector<KerasClass<LearningRateSchedule>> table = {
      keras_class<LearningRateSchedule, schedules::ExponentialDecay>("ExponentialDecay"),
      keras_class<LearningRateSchedule, schedules::PiecewiseConstantDecay>("PiecewiseConstantDecay"),
      keras_class<LearningRateSchedule, schedules::CosineDecay>("CosineDecay"),
  };
  return table;
}

std::string lower(std::string_view name) {
  std::string key(name);
  for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return key;
}

template <class Base>
const KerasClass<Base>* find_by_type(const std::vector<KerasClass<Base>>& table, const std::type_index& type) {
  for (const KerasClass<Base>& c : table) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

template <class Base>
std::string class_names(const std::vector<KerasClass<Base>>& table) {
  std::string out;
  for (const KerasClass<Base>& c : table) out += (out.empty() ? "" : ", ") + c.class_name;
  return out;
}

/// The options of a Keras object: its "config" (an empty one when absent or null).
Config inner_config(const Config& object, const std::string& what) {
  if (!object.contains("config") || object.at("config").is_null()) return Config::object();
  const Config& config = object.at("config");
  if (!config.is_object()) throw ValueError(what + ": 'config' must be a JSON object of options, got " + config.dump());
  return config;
}

// Keras writes null for its public classes, and the class's own name for some others; any other
// registered name is a class of its user's own that only shares the built-in one's name.
void check_builtin_object(const Config& object, const std::string& class_name, const std::string& who) {
  if (!object.contains("registered_name") || !object.at("registered_name").is_string()) return;
  const std::string registered = object.at("registered_name").get<std::string>();
  if (registered == class_name) return;
  throw ValueError(who + ": '" + class_name + "' is registered as '" + registered +
                   "', a class of its user's own; Kestrel makes only its built-in classes");
}

}  // namespace

Handle<Optimizer> get(std::string_view name) {
  const std::string key = lower(name);
  for (const KerasClass<Optimizer>& c : optimizer_classes()) {
    if (lower(c.class_name) == key) return c.from_config(Config::object());
  }
  throw ValueError("optimizers::get: unknown optimizer '" + std::string(name) +
                   "'; known names are sgd, adam, adamw, rmsprop (any case)");
}

nlohmann::json serialize(const Optimizer& optimizer) {
  const KerasClass<Optimizer>* c = find_by_type(optimizer_classes(), std::type_index(typeid(optimizer)));
  if (c == nullptr) {
    throw ValueError("optimizers::serialize: optimizer '" + optimizer.name() +
                     "' is of a class of its own, which Keras could not read back; Kestrel writes the configs of " +
                     class_names(optimizer_classes()));
  }
  return serialization::keras_object("keras.optimizers", c->class_name, optimizer.get_config());
}

std::shared_ptr<Optimizer> deserialize(const nlohmann::json& config) {
  if (config.is_string()) return get(config.get<std::string>()).shared();
  const std::string class_name = serialization::required<std::string>(config, "class_name", "an optimizer's config");
  check_builtin_object(config, class_name, "optimizers::deserialize");
  const std::string key = lower(class_name);
  for (const KerasClass<Optimizer>& c : optimizer_classes()) {
    if (lower(c.class_name) == key) {
      return c.from_config(inner_config(config, "optimizer class '" + c.class_name + "'"));
    }
  }
  throw ValueError("optimizers::deserialize: unknown optimizer class '" + class_name + "'; Kestrel's optimizers are " +
                   class_names(optimizer_classes()) + " (any case)");
}

namespace schedules {

nlohmann::json serialize(const LearningRateSchedule& schedule) {
  const KerasClass<LearningRateSchedule>* c = find_by_type(schedule_classes(), std::type_index(typeid(schedule)));
  if (c == nullptr) {
    throw ValueError("schedules::serialize: learning-rate schedule '" + schedule.name() +
                     "' is of a class of its own, which Keras could not read back; Kestrel writes the configs of " +
                     class_names(schedule_classes()));
  }
  return serialization::keras_object("keras.optimizers.schedules", c->class_name, schedule.get_config());
}

std::shared_ptr<LearningRateSchedule> deserialize(const nlohmann::json& config) {
  const std::string class_name =
      serialization::required<std::string>(config, "class_name", "a learning-rate schedule's config");
  check_builtin_object(config, class_name, "schedules::deserialize");
  for (const KerasClass<LearningRateSchedule>& c : schedule_classes()) {
    if (c.class_name == class_name) {
      return c.from_config(inner_config(config, "learning-rate schedule class '" + c.class_name + "'"));
    }
  }
  throw ValueError("schedules::deserialize: unknown learning-rate schedule class '" + class_name +
                   "'; Kestrel's schedules are " + class_names(schedule_classes()));
}

}  // namespace schedules
}  // namespace kestrel::optimizers
