#include "framework/callbacks/monitor.h"

#include <limits>
#include <string>

#include "framework/core/error.h"

namespace kestrel::callbacks::detail {

Direction resolve_direction(std::string_view mode, std::string_view monitor, std::string_view callback) {
  if (mode == "min") return Direction::min;
  if (mode == "max") return Direction::max;
  if (mode != "auto") {
    throw ValueError(std::string(callback) + ": mode '" + std::string(mode) + "' is not one of auto, min, max");
  }
  for (std::string_view rising : {"acc", "auc", "precision", "recall"}) {
    if (monitor.find(rising) != std::string_view::npos) return Direction::max;
  }
  return Direction::min;
}

double worst_value(Direction direction) {
  const double inf = std::numeric_limits<double>::infinity();
  return direction == Direction::min ? inf : -inf;
}

std::optional<double> find_value(const Logs& logs, std::string_view monitor) {
  auto found = logs.find(std::string(monitor));
  if (found == logs.end()) return std::nullopt;
  return found->second;
}

std::string key_list(const Logs& logs) {
  std::string out;
  for (const auto& [key, value] : logs) {
    if (!out.empty()) out += ',';
    out += key;
  }
  return out;
}

}  // namespace kestrel::callbacks::detail
