#include "framework/io/read_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "framework/core/error.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

namespace fs = std::filesystem;
using testing::contains;
using testing::error_message;

fs::path temporary_path(const std::string& name) {
  return fs::temp_directory_path() / ("kestrel_read_file_test_" + std::to_string(::getpid()) + "_" + name);
}

TEST(ReadFile, ReturnsEveryByteOfTheFile) {
  // NUL, CR LF and bytes above 0x7f, past the first 64 KiB: nothing is translated or cut short.
  std::string bytes;
  for (int i = 0; i < 70000; ++i) bytes.push_back(static_cast<char>(i % 256));
  bytes += "\r\nlast line without a newline";
  const fs::path path = temporary_path("bytes");
  std::ofstream(path, std::ios::binary) << bytes;
  EXPECT_EQ(io::read_file(path, "[reader]", "input"), bytes);
  fs::remove(path);
}

TEST(ReadFile, AnEmptyFileGivesAnEmptyString) {
  const fs::path path = temporary_path("empty");
  std::ofstream(path, std::ios::binary).close();
  EXPECT_EQ(io::read_file(path, "[reader]", "input"), "");
  fs::remove(path);
}

TEST(ReadFile, AMissingFileNamesTheReaderTheRoleThePathAndTheReason) {
  const fs::path path = temporary_path("missing");
  const std::string m = error_message<IOError>([&] { io::read_file(path, "[WordPieceTokenizer]", "vocab file"); });
  EXPECT_TRUE(contains(m, "[WordPieceTokenizer] cannot open vocab file '" + path.string() + "'")) << m;
  EXPECT_TRUE(contains(m, "No such file or directory")) << m;
}

TEST(ReadFile, ADirectoryCannotBeRead) {
  const std::string m =
      error_message<IOError>([] { io::read_file(fs::temp_directory_path(), "fortunes:", "fortune file"); });
  EXPECT_TRUE(contains(m, "fortunes: cannot")) << m;
  EXPECT_TRUE(contains(m, "fortune file '" + fs::temp_directory_path().string() + "'")) << m;
}

}  // namespace
}  // namespace kestrel
