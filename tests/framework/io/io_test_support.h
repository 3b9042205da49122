// Helpers for the framing tests: a scratch directory, whole-file reads and writes, and a helper
// that reads every record of a file, collecting errors.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "framework/io/record_reader.h"

namespace kestrel::testing {

/// A fresh directory under the system temp dir, removed at the end of the test.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() / ("kestrel_io_" + std::string(info->test_suite_name()) + "_" +
                                                      info->name() + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// What reading a whole file gave: the records, and the message of the error that stopped it.
struct ReadResult {
  std::vector<std::string> records;
  std::string error;  // empty: the file ended cleanly
};

/// Reads records until the end or the first error.
inline ReadResult read_all(const std::string& path, io::RecordReaderOptions options = {}) {
  ReadResult result;
  try {
    io::RecordReader reader(path, options);
    while (auto record = reader.next()) result.records.push_back(*record);
  } catch (const IOError& e) {
    result.error = e.what();
  }
  return result;
}

/// Bytes that compress poorly (a simple generator), so compressed streams have some length.
inline std::string noise(std::size_t size, unsigned seed) {
  std::string out(size, '\0');
  unsigned x = seed * 2654435761u + 1;
  for (char& c : out) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x & 0xffu);
  }
  return out;
}

}  // namespace kestrel::testing
