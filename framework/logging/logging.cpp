#include "framework/logging/logging.h"

#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>

#include <spdlog/sinks/stdout_color_sinks.h>

#include "framework/core/error.h"

namespace kestrel::logging {
namespace {

struct Registry {
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<spdlog::logger>> loggers;
  spdlog::level::level_enum level = spdlog::level::info;
  bool level_read_from_env = false;
};

Registry& registry() {
  static Registry r;
  return r;
}

// Called with the registry locked: the environment sets the starting level once.
void read_env_level(Registry& r) {
  if (r.level_read_from_env) return;
  r.level_read_from_env = true;
  if (const char* env = std::getenv("KESTREL_LOG_LEVEL"); env != nullptr && *env != '\0') {
    try {
      r.level = parse_level(env);
    } catch (const ValueError&) {
      // A bad value must not stop the program; keep the default and say so once.
      spdlog::stderr_color_mt("kestrel")->warn("KESTREL_LOG_LEVEL='{}' is not a level; using info", env);
    }
  }
}

}  // namespace

spdlog::level::level_enum parse_level(std::string_view name) {
  for (auto level : {spdlog::level::trace, spdlog::level::debug, spdlog::level::info, spdlog::level::warn,
                     spdlog::level::err, spdlog::level::critical, spdlog::level::off}) {
    auto text = spdlog::level::to_string_view(level);
    if (name == std::string_view(text.data(), text.size())) return level;
  }
  if (name == "warning") return spdlog::level::warn;
  if (name == "error") return spdlog::level::err;
  throw ValueError("log level '" + std::string(name) +
                   "' is not one of trace, debug, info, warn, error, critical, off");
}

std::shared_ptr<spdlog::logger> get(std::string_view name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  read_env_level(r);
  std::string key(name);
  auto found = r.loggers.find(key);
  if (found != r.loggers.end()) return found->second;
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>(key, sink);
  logger->set_level(r.level);
  r.loggers.emplace(key, logger);
  return logger;
}

void set_level(spdlog::level::level_enum level) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.level_read_from_env = true;
  r.level = level;
  for (auto& [name, logger] : r.loggers) logger->set_level(level);
}

spdlog::level::level_enum level() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  read_env_level(r);
  return r.level;
}

}  // namespace kestrel::logging
