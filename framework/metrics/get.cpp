// Metrics by Keras name: metrics::get, with "accuracy" resolved against the loss, and the Keras
// objects of a compile config (serialize, deserialize; framework/metrics/serialization.h).
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
#include "framework/losses/serialization.h"
#include "framework/metrics/metrics.h"
#include "framework/metrics/serialization.h"

namespace kestrel::metrics {
namespace {

using serialization::Config;

struct Entry {
  std::string_view class_name;          // Keras's class, what a config names; get() takes it too
  std::vector<std::string_view> names;  // the function name first (listed in errors), then aliases
  std::type_index type;
  std::function<Handle<Metric>(const std::string& name)> make;
  std::function<std::shared_ptr<Metric>(const Config& config)> from_config;
};

template <class M, class Options>
Entry entry(std::string_view class_name, std::vector<std::string_view> names) {
  return {class_name, std::move(names), std::type_index(typeid(M)),
          [](const std::string& name) {
            Options options;
            options.name = name;
            return Handle<Metric>(M(std::move(options)));
          },
          [](const Config& config) -> std::shared_ptr<Metric> { return std::make_shared<M>(M::from_config(config)); }};
}

// Class names, function names and Keras's short aliases. Accuracy (exact matches) has no name of
// its own here: "accuracy" resolves against the loss, and its class name finds it.
const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = {
      entry<Accuracy, AccuracyOptions>("Accuracy", {}),
      entry<BinaryAccuracy, BinaryAccuracyOptions>("BinaryAccuracy", {"binary_accuracy"}),
      entry<CategoricalAccuracy, CategoricalAccuracyOptions>("CategoricalAccuracy", {"categorical_accuracy"}),
      entry<SparseCategoricalAccuracy, SparseCategoricalAccuracyOptions>("SparseCategoricalAccuracy",
                                                                         {"sparse_categorical_accuracy"}),
      entry<TopKCategoricalAccuracy, TopKCategoricalAccuracyOptions>("TopKCategoricalAccuracy",
                                                                     {"top_k_categorical_accuracy"}),
      entry<SparseTopKCategoricalAccuracy, SparseTopKCategoricalAccuracyOptions>("SparseTopKCategoricalAccuracy",
                                                                                 {"sparse_top_k_categorical_accuracy"}),
      entry<MeanSquaredError, MeanSquaredErrorOptions>("MeanSquaredError", {"mean_squared_error", "mse", "MSE"}),
      entry<MeanAbsoluteError, MeanAbsoluteErrorOptions>("MeanAbsoluteError", {"mean_absolute_error", "mae", "MAE"}),
      entry<AUC, AUCOptions>("AUC", {"auc"}),
      entry<Precision, PrecisionOptions>("Precision", {"precision"}),
      entry<Recall, RecallOptions>("Recall", {"recall"}),
      entry<Mean, MeanOptions>("Mean", {"mean"}),
  };
  return table;
}

bool is_one_of(std::string_view name, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names) {
    if (n == name) return true;
  }
  return false;
}

bool is_accuracy(std::string_view name) { return name == "accuracy" || name == "acc"; }

const Entry* find(std::string_view name) { return find_by_keras_name(entries(), name); }

std::string class_names() { return keras_class_names(entries()); }

// Keras picks the accuracy that fits the targets; the loss says which targets the model has.
Handle<Metric> resolve_accuracy(const std::string& name, std::string_view loss_name) {
  if (is_one_of(loss_name, {"sparse_categorical_crossentropy", "SparseCategoricalCrossentropy"})) {
    return SparseCategoricalAccuracy({.name = name});
  }
  if (is_one_of(loss_name, {"categorical_crossentropy", "CategoricalCrossentropy"})) {
    return CategoricalAccuracy({.name = name});
  }
  if (is_one_of(loss_name, {"binary_crossentropy", "BinaryCrossentropy", "bce", "BCE"})) {
    return BinaryAccuracy({.name = name});
  }
  return Accuracy({.name = name});
}

}  // namespace

// As Keras's compile, a metric given by name is named by that string ("acc" logs as "acc").
Handle<Metric> get(std::string_view name, std::string_view loss_name) {
  const std::string requested(name);
  if (is_accuracy(name)) return resolve_accuracy(requested, loss_name);
  if (const Entry* e = find(name)) return e->make(requested);
  std::string known = "accuracy (acc)";
  for (const Entry& e : entries()) {
    if (!e.names.empty()) known += ", " + std::string(e.names[0]);
  }
  throw ValueError(op_message("metrics::get", "unknown metric '" + requested + "'; Kestrel's metrics are " + known +
                                                  " (also by class name, and mse, mae)"));
}

std::vector<std::string> names() {
  std::vector<std::string> out{"accuracy"};
  for (const Entry& entry : entries()) {
    if (!entry.names.empty()) out.emplace_back(entry.names[0]);
  }
  return out;
}

nlohmann::json serialize(const Metric& metric) {
  for (const Entry& e : entries()) {
    if (e.type == std::type_index(typeid(metric))) {
      return serialization::keras_object("keras.metrics", std::string(e.class_name), metric.get_config());
    }
  }
  throw ValueError(op_message("metrics::serialize", "metric '" + metric.name() +
                                                        "' is of a class of its own, which Keras could not read "
                                                        "back; Kestrel writes the configs of " +
                                                        class_names()));
}

std::shared_ptr<Metric> deserialize(const nlohmann::json& config, std::string_view loss_name) {
  if (config.is_string()) return get(config.get<std::string>(), loss_name).shared();
  const std::string class_name = serialization::required<std::string>(config, "class_name", "a metric's config");
  // Keras writes a metric function (keras.metrics.mean_squared_error) as {"class_name":
  // "function", "config": "mean_squared_error"}: a name, with no options.
  if (class_name == "function") {
    return get(serialization::required<std::string>(config, "config", "a metric function's config"), loss_name)
        .shared();
  }
  losses::check_builtin_object(config, class_name, "metrics::deserialize");
  const Entry* e = find(class_name);
  if (e == nullptr && !is_accuracy(class_name)) {
    throw ValueError(op_message("metrics::deserialize",
                                "unknown metric class '" + class_name + "'; Kestrel's metrics are " + class_names()));
  }
  // A function's name ("accuracy", "mse") names no options; a class name reads its config.
  if (e == nullptr || e->class_name != class_name) return get(class_name, loss_name).shared();
  return e->from_config(config.contains("config") && !config.at("config").is_null() ? config.at("config")
                                                                                    : Config::object());
}

}  // namespace kestrel::metrics
