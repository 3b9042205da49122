#include "framework/saving/atomic_write.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "framework/core/error.h"
#include "framework/saving/save_steps.h"
#include "framework/saving/save_temporaries.h"

namespace kestrel::saving {
namespace {

/// One save at a time: two threads saving one path would share a temporary name.
std::mutex& save_mutex() {
  static std::mutex mutex;
  return mutex;
}

/// Forces the file's data to the disk, so the rename can never expose a file that is still empty.
void sync_to_disk(const std::string& path, const std::string& display_name) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    const int error = errno;
    if (fd >= 0) ::close(fd);
    throw IOError(in_quotes(display_name) + ": cannot sync " + in_quotes(path) + " to disk: " + std::strerror(error));
  }
  ::close(fd);
}

/// Makes the rename itself durable; a directory that cannot be synced only loses that guarantee.
void sync_directory(const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

void write_atomically(const std::string& path, const std::function<void(const std::string& temporary)>& write) {
  const std::lock_guard<std::mutex> lock(save_mutex());
  remove_stale_temporaries(path);
  const std::string temporary = temporary_path(path);
  try {
    write(temporary);
    detail::before_save_step(SaveStep::sync);
    sync_to_disk(temporary, path);
    detail::before_save_step(SaveStep::rename);
    if (std::rename(temporary.c_str(), path.c_str()) != 0) {
      const int error = errno;
      throw IOError(in_quotes(path) + ": cannot rename " + in_quotes(temporary) + " to it: " + std::strerror(error));
    }
  } catch (...) {
    std::remove(temporary.c_str());  // the previous file at path is untouched
    throw;
  }
  sync_directory(path);
}

}  // namespace kestrel::saving
