// On/off settings from the environment: unset, "" and "0" off, "1" on, anything else an error that
// names the variable and what 1 would do.
#include "framework/core/switch_setting.h"

#include <gtest/gtest.h>

#include "framework/core/error.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

TEST(SwitchSetting, IsOneOrZero) {
  EXPECT_FALSE(parse_switch_setting("KESTREL_PROFILE", nullptr, "profile"));
  EXPECT_FALSE(parse_switch_setting("KESTREL_PROFILE", "", "profile"));
  EXPECT_FALSE(parse_switch_setting("KESTREL_PROFILE", "0", "profile"));
  EXPECT_TRUE(parse_switch_setting("KESTREL_PROFILE", "1", "profile"));
  const std::string message =
      testing::error_message<ValueError>([] { parse_switch_setting("KESTREL_PROFILE", "on", "profile"); });
  EXPECT_TRUE(testing::contains(message, "KESTREL_PROFILE='on' is not a setting: use 1 to profile, or 0 (the default)"))
      << message;
}

}  // namespace
}  // namespace kestrel
