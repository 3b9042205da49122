#include "framework/saving/save_temporaries.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <filesystem>
#include <optional>

#include "framework/io/host_name.h"
#include "framework/logging/logging.h"

namespace kestrel::saving {
namespace {

namespace fs = std::filesystem;

/// "<file name>.tmp-<host>-": what every temporary of path on this host starts with.
std::string temporary_prefix(const fs::path& path) {
  return path.filename().string() + ".tmp-" + io::host_name() + "-";
}

/// The pid a temporary's name ends in, when the rest of the name is exactly the prefix.
std::optional<pid_t> temporary_pid(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  const char* first = name.data() + prefix.size();
  const char* last = name.data() + name.size();
  pid_t pid = 0;
  const auto [end, error] = std::from_chars(first, last, pid);
  if (error != std::errc() || end != last || pid <= 0) return std::nullopt;
  return pid;
}

/// Only ESRCH proves that no process has the pid: EPERM means one runs under another user. A pid
/// reused since its save died keeps that temporary until the new process ends too.
bool process_is_gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

}  // namespace

std::string temporary_path(const std::string& path) {
  return path + ".tmp-" + io::host_name() + "-" + std::to_string(::getpid());
}

void remove_stale_temporaries(const std::string& path) {
  const fs::path target(path);
  const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  const std::string prefix = temporary_prefix(target);
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    const std::optional<pid_t> pid = temporary_pid(name, prefix);
    if (!pid || !process_is_gone(*pid)) continue;
    std::error_code removal;
    if (fs::remove(it->path(), removal)) {
      logging::get("kestrel.saving")->info("{}: removed '{}', left by a save that did not finish", path, name);
    }
  }
}

}  // namespace kestrel::saving
