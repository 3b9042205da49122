#include "framework/logging/logging.h"

#include <gtest/gtest.h>

#include <spdlog/sinks/ostream_sink.h>

#include <sstream>

#include "framework/core/error.h"

namespace kestrel::logging {
namespace {

TEST(Logging, SameNameGivesSameLogger) {
  EXPECT_EQ(get("kestrel.test").get(), get("kestrel.test").get());
  EXPECT_NE(get("kestrel.test").get(), get("kestrel.other").get());
  EXPECT_EQ(get("kestrel.test")->name(), "kestrel.test");
}

TEST(Logging, SetLevelReachesExistingAndNewLoggers) {
  auto before = level();
  auto existing = get("kestrel.level_a");
  set_level(spdlog::level::debug);
  EXPECT_EQ(existing->level(), spdlog::level::debug);
  EXPECT_EQ(get("kestrel.level_b")->level(), spdlog::level::debug);
  set_level(before);
}

TEST(Logging, MessagesBelowTheLevelAreDropped) {
  auto before = level();
  std::ostringstream out;
  auto logger = get("kestrel.filtered");
  logger->sinks().push_back(std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  set_level(spdlog::level::warn);
  logger->info("hidden");
  logger->warn("shown");
  logger->flush();
  EXPECT_EQ(out.str().find("hidden"), std::string::npos);
  EXPECT_NE(out.str().find("shown"), std::string::npos);
  set_level(before);
}

TEST(Logging, ParseLevelAcceptsNamesAndRejectsOthers) {
  EXPECT_EQ(parse_level("debug"), spdlog::level::debug);
  EXPECT_EQ(parse_level("warning"), spdlog::level::warn);
  EXPECT_EQ(parse_level("error"), spdlog::level::err);
  try {
    parse_level("loud");
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("loud"), std::string::npos);
  }
}

}  // namespace
}  // namespace kestrel::logging
