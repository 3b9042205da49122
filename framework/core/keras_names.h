// Finding a built-in class by a name Keras knows it by: its class name ("MeanSquaredError") or
// one of its function names and aliases ("mean_squared_error", "mse"). The losses and metrics
// tables each hold entries with `class_name` and `names`.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace kestrel {

/// The entry whose class name or one of whose names is `name`, or null.
template <class Entry>
const Entry* find_by_keras_name(const std::vector<Entry>& entries, std::string_view name) {
  for (const Entry& e : entries) {
    if (e.class_name == name || std::find(e.names.begin(), e.names.end(), name) != e.names.end()) return &e;
  }
  return nullptr;
}

/// The class names, comma-separated, for error messages.
template <class Entry>
std::string keras_class_names(const std::vector<Entry>& entries) {
  std::string out;
  for (const Entry& e : entries) out += (out.empty() ? "" : ", ") + std::string(e.class_name);
  return out;
}

}  // namespace kestrel
