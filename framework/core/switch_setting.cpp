#include "framework/core/switch_setting.h"

#include <string>

#include "framework/core/error.h"

namespace kestrel {

bool parse_switch_setting(std::string_view variable, const char* value, std::string_view what_on) {
  const std::string_view setting = value != nullptr ? value : "";
  if (setting.empty() || setting == "0") return false;
  if (setting == "1") return true;
  throw ValueError(std::string(variable) + "='" + std::string(setting) + "' is not a setting: use 1 to " +
                   std::string(what_on) + ", or 0 (the default)");
}

}  // namespace kestrel
