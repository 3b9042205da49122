// losses::get: a loss by its Keras name, function name or alias.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "framework/core/error.h"
#include "framework/losses/losses.h"

namespace kestrel::losses {
namespace {

struct Entry {
  std::vector<std::string_view> names;  // the first is the canonical name, listed in errors
  std::function<Handle<Loss>()> make;
};

// Every spelling Keras's losses.get accepts for these losses: the function name, the class name
// and the short aliases. The loss keeps its canonical name, so metrics::get can resolve
// "accuracy" against it whichever spelling was used.
const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = {
      {{"sparse_categorical_crossentropy", "SparseCategoricalCrossentropy"},
       [] { return Handle<Loss>(SparseCategoricalCrossentropy()); }},
      {{"categorical_crossentropy", "CategoricalCrossentropy"}, [] { return Handle<Loss>(CategoricalCrossentropy()); }},
      {{"binary_crossentropy", "BinaryCrossentropy", "bce", "BCE"}, [] { return Handle<Loss>(BinaryCrossentropy()); }},
      {{"mean_squared_error", "MeanSquaredError", "mse", "MSE"}, [] { return Handle<Loss>(MeanSquaredError()); }},
      {{"mean_absolute_error", "MeanAbsoluteError", "mae", "MAE"}, [] { return Handle<Loss>(MeanAbsoluteError()); }},
  };
  return table;
}

}  // namespace

Handle<Loss> get(std::string_view name) {
  std::string known;
  for (const Entry& entry : entries()) {
    for (std::string_view spelling : entry.names) {
      if (spelling == name) return entry.make();
    }
    known += (known.empty() ? "" : ", ") + std::string(entry.names[0]);
  }
  throw ValueError(op_message("losses::get", "unknown loss '" + std::string(name) + "'; Kestrel's losses are " + known +
                                                 " (also by class name, and mse, mae, bce)"));
}

std::vector<std::string> names() {
  std::vector<std::string> out;
  for (const Entry& entry : entries()) out.emplace_back(entry.names[0]);
  return out;
}

}  // namespace kestrel::losses
