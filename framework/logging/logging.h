// Named loggers per subsystem, on spdlog.
//
//   logging::get("kestrel.jit")->info("compiled train step in {} ms", ms);
//   // KESTREL_LOG_LEVEL=debug ./my_program      sets the starting level of every Kestrel logger
//
// Library code logs through these and never prints; the progress bar is the one thing that
// writes to stdout. Loggers write to stderr.
#pragma once

#include <memory>
#include <string_view>

#include <spdlog/spdlog.h>

namespace kestrel::logging {

/// The logger with this name ("kestrel.jit", "kestrel.data", "kestrel.distribute", ...),
/// created on first use at the current level.
std::shared_ptr<spdlog::logger> get(std::string_view name);

/// Sets the level of every Kestrel logger, present and future.
void set_level(spdlog::level::level_enum level);
spdlog::level::level_enum level();

/// Parses "trace", "debug", "info", "warn", "error", "critical" or "off"; throws ValueError otherwise.
spdlog::level::level_enum parse_level(std::string_view name);

}  // namespace kestrel::logging
