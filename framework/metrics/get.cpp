// metrics::get: a metric by Keras name, with "accuracy" resolved against the loss.
#include <functional>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/metrics/metrics.h"

namespace kestrel::metrics {
namespace {

struct Entry {
  std::vector<std::string_view> names;  // the first is listed in errors
  std::function<Handle<Metric>(const std::string& name)> make;
};

template <class M, class Options>
std::function<Handle<Metric>(const std::string&)> maker() {
  return [](const std::string& name) {
    Options options;
    options.name = name;
    return Handle<Metric>(M(std::move(options)));
  };
}

// Function names, class names and Keras's short aliases.
const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = {
      {{"binary_accuracy", "BinaryAccuracy"}, maker<BinaryAccuracy, BinaryAccuracyOptions>()},
      {{"categorical_accuracy", "CategoricalAccuracy"}, maker<CategoricalAccuracy, CategoricalAccuracyOptions>()},
      {{"sparse_categorical_accuracy", "SparseCategoricalAccuracy"},
       maker<SparseCategoricalAccuracy, SparseCategoricalAccuracyOptions>()},
      {{"top_k_categorical_accuracy", "TopKCategoricalAccuracy"},
       maker<TopKCategoricalAccuracy, TopKCategoricalAccuracyOptions>()},
      {{"sparse_top_k_categorical_accuracy", "SparseTopKCategoricalAccuracy"},
       maker<SparseTopKCategoricalAccuracy, SparseTopKCategoricalAccuracyOptions>()},
      {{"mean_squared_error", "MeanSquaredError", "mse", "MSE"}, maker<MeanSquaredError, MeanSquaredErrorOptions>()},
      {{"mean_absolute_error", "MeanAbsoluteError", "mae", "MAE"},
       maker<MeanAbsoluteError, MeanAbsoluteErrorOptions>()},
      {{"auc", "AUC"}, maker<AUC, AUCOptions>()},
      {{"precision", "Precision"}, maker<Precision, PrecisionOptions>()},
      {{"recall", "Recall"}, maker<Recall, RecallOptions>()},
      {{"mean", "Mean"}, maker<Mean, MeanOptions>()},
  };
  return table;
}

bool is_one_of(std::string_view name, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names) {
    if (n == name) return true;
  }
  return false;
}

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
  if (name == "accuracy" || name == "acc") return resolve_accuracy(requested, loss_name);
  std::string known = "accuracy (acc)";
  for (const Entry& entry : entries()) {
    for (std::string_view spelling : entry.names) {
      if (spelling == name) return entry.make(requested);
    }
    known += ", " + std::string(entry.names[0]);
  }
  throw ValueError(op_message("metrics::get", "unknown metric '" + requested + "'; Kestrel's metrics are " + known +
                                                  " (also by class name, and mse, mae)"));
}

std::vector<std::string> names() {
  std::vector<std::string> out{"accuracy"};
  for (const Entry& entry : entries()) out.emplace_back(entry.names[0]);
  return out;
}

}  // namespace kestrel::metrics
