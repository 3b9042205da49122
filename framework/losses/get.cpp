// Losses by Keras name: losses::get ("mse" in compile()), and the Keras objects of a compile
// config (serialize, deserialize; framework/losses/serialization.h).
#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <typeindex>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/core/keras_names.h"
#include "framework/layers/serialization.h"
#include "framework/losses/losses.h"
#include "framework/losses/serialization.h"

namespace kestrel::losses {
namespace {

using serialization::Config;

struct Entry {
  std::string_view class_name;          // Keras's class, what a config names
  std::vector<std::string_view> names;  // the function name first (the canonical name, listed in errors), then aliases
  std::type_index type;
  std::function<std::shared_ptr<Loss>(const Config& config)> from_config;
};

template <class T>
Entry entry(std::string_view class_name, std::vector<std::string_view> names) {
  return {class_name, std::move(names), std::type_index(typeid(T)),
          [](const Config& config) -> std::shared_ptr<Loss> { return std::make_shared<T>(T::from_config(config)); }};
}

// Every spelling Keras's losses.get accepts for these losses: the class name, the function name
// and the short aliases. A loss got by name has its defaults, so it keeps its canonical name,
// and metrics::get can resolve "accuracy" against it whichever spelling was used.
const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = {
      entry<SparseCategoricalCrossentropy>("SparseCategoricalCrossentropy", {"sparse_categorical_crossentropy"}),
      entry<CategoricalCrossentropy>("CategoricalCrossentropy", {"categorical_crossentropy"}),
      entry<BinaryCrossentropy>("BinaryCrossentropy", {"binary_crossentropy", "bce", "BCE"}),
      entry<MeanSquaredError>("MeanSquaredError", {"mean_squared_error", "mse", "MSE"}),
      entry<MeanAbsoluteError>("MeanAbsoluteError", {"mean_absolute_error", "mae", "MAE"}),
  };
  return table;
}

const Entry* find(std::string_view name) { return find_by_keras_name(entries(), name); }

std::string class_names() { return keras_class_names(entries()); }

}  // namespace

Handle<Loss> get(std::string_view name) {
  if (const Entry* e = find(name)) return e->from_config(Config::object());
  std::string known;
  for (const Entry& e : entries()) known += (known.empty() ? "" : ", ") + std::string(e.names[0]);
  throw ValueError(op_message("losses::get", "unknown loss '" + std::string(name) + "'; Kestrel's losses are " + known +
                                                 " (also by class name, and mse, mae, bce)"));
}

std::vector<std::string> names() {
  std::vector<std::string> out;
  for (const Entry& entry : entries()) out.emplace_back(entry.names[0]);
  return out;
}

nlohmann::json serialize(const Loss& loss) {
  for (const Entry& e : entries()) {
    if (e.type == std::type_index(typeid(loss))) {
      return serialization::keras_object("keras.losses", std::string(e.class_name), loss.get_config());
    }
  }
  throw ValueError(op_message("losses::serialize", "loss '" + loss.name() +
                                                       "' is of a class of its own, which Keras could not read "
                                                       "back; Kestrel writes the configs of " +
                                                       class_names()));
}

std::shared_ptr<Loss> deserialize(const nlohmann::json& config) {
  if (config.is_string()) return get(config.get<std::string>()).shared();
  const std::string class_name = serialization::required<std::string>(config, "class_name", "a loss's config");
  // Keras writes a loss function (loss="mse" resolved, or keras.losses.mean_squared_error) as
  // {"class_name": "function", "config": "mean_squared_error"}: a name, with no options.
  if (class_name == "function") {
    return get(serialization::required<std::string>(config, "config", "a loss function's config")).shared();
  }
  check_builtin_object(config, class_name, "losses::deserialize");
  const Entry* e = find(class_name);
  if (e == nullptr) {
    throw ValueError(op_message("losses::deserialize",
                                "unknown loss class '" + class_name + "'; Kestrel's losses are " + class_names()));
  }
  // A function's name ("mse") names no options; a class name reads its config.
  if (e->class_name != class_name) return get(class_name).shared();
  const Config options =
      config.contains("config") && !config.at("config").is_null() ? config.at("config") : Config::object();
  return e->from_config(options);
}

}  // namespace kestrel::losses
