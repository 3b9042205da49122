// On/off settings read from the environment (KESTREL_JIT_VERIFY, KESTREL_PROFILE): unset, "" or
// "0" is off, "1" is on, and anything else is a mistake worth stopping for rather than guessing.
//
//   static const bool on = parse_switch_setting("KESTREL_PROFILE", std::getenv("KESTREL_PROFILE"),
//                                               "time every compiled program's kernels");
#pragma once

#include <string_view>

namespace kestrel {

/// The setting `value` of environment variable `variable` (null: unset). Throws ValueError naming
/// the variable, the value and what 1 does (`what_on`) for anything but unset, "", "0" and "1".
bool parse_switch_setting(std::string_view variable, const char* value, std::string_view what_on);

}  // namespace kestrel
