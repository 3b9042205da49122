// Which way a monitored quantity improves, shared by EarlyStopping, ModelCheckpoint and
// ReduceLROnPlateau (internal to the callbacks).
//
//   auto direction = detail::resolve_direction("auto", "val_accuracy", "EarlyStopping");  // max
//   if (detail::improves(direction, current - min_delta, best)) ...
#pragma once

#include <optional>
#include <string_view>

#include "framework/model/callback.h"

namespace kestrel::callbacks::detail {

enum class Direction { min, max };

/// mode "min" or "max" as given; "auto" picks max for names holding "acc", "auc", "precision"
/// or "recall" (metrics that grow as the model improves) and min for the rest (losses, errors).
/// Other modes throw ValueError naming the callback.
Direction resolve_direction(std::string_view mode, std::string_view monitor, std::string_view callback);

/// True when value is better than reference in this direction (strictly).
inline bool improves(Direction direction, double value, double reference) {
  return direction == Direction::min ? value < reference : value > reference;
}

/// The worst possible value: +inf for min, -inf for max.
double worst_value(Direction direction);

/// The monitored value from logs, or nothing.
std::optional<double> find_value(const Logs& logs, std::string_view monitor);

/// "a,b,c": the keys of logs, for "not available" warnings.
std::string key_list(const Logs& logs);

}  // namespace kestrel::callbacks::detail
