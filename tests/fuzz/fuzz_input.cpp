#include "tests/fuzz/fuzz_input.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

namespace kestrel::fuzz {

namespace {

// The files this process wrote, removed when it exits.
struct WrittenFiles {
  std::set<std::string> paths;
  ~WrittenFiles() {
    std::error_code ignored;
    for (const std::string& path : paths) std::filesystem::remove(path, ignored);
  }
};

}  // namespace

std::string write_input_file(std::string_view content, const std::string& suffix) {
  static WrittenFiles written;
  // Memory-backed when possible: a fuzzer writes thousands of these a second.
  static const std::filesystem::path dir = std::filesystem::is_directory("/dev/shm")
                                               ? std::filesystem::path("/dev/shm")
                                               : std::filesystem::temp_directory_path();
  const std::string path = (dir / ("kestrel-fuzz-" + std::to_string(::getpid()) + suffix)).string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.close();
  if (!out) std::abort();  // the harness itself failed, not Kestrel
  written.paths.insert(path);
  return path;
}

}  // namespace kestrel::fuzz
