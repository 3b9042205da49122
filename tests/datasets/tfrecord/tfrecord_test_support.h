// Helpers for the TFRecord tests: the golden files and what they hold, and running programs.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "framework/data/element.h"
#include "tests/framework/io/io_test_support.h"
#include "tests/support/tensor_values.h"

namespace kestrel::testing {

/// A file in tests/datasets/tfrecord/golden (written by make_golden.py).
inline std::string golden(const std::string& name) {
  return (std::filesystem::path(KESTREL_TFRECORD_GOLDEN_DIR) / name).string();
}

/// The records of records*.tfrecord, as make_golden.py writes them.
inline std::vector<std::string> golden_records() {
  std::string all_bytes;
  for (int i = 0; i < 256; ++i) all_bytes.push_back(static_cast<char>(i));
  return {"", "a", "hello, kestrel", all_bytes};
}

/// The Examples of examples*.tfrecord, as decode_example gives them.
inline std::vector<data::Element> golden_examples() {
  return {
      data::Element{{"input_ids", int64s({101, 7592, 2088, 102})},
                    {"label", int64s({1})},
                    {"score", floats({0.5f, -2.25f})},
                    {"text", data::Strings(std::vector<std::string>{"hello world"})}},
      data::Element{{"input_ids", int64s({101, 102})},
                    {"label", int64s({0})},
                    {"score", floats({1024.0f, 0.125f})},
                    {"text", data::Strings(std::vector<std::string>{"caf\xc3\xa9", ""})}},
      data::Element{{"big", int64s({-1, std::int64_t{1} << 62, INT64_MIN})},
                    {"blob", data::Strings(std::vector<std::string>{std::string("\xff\x00\x01", 3)})},
                    {"empty", int64s({})},
                    {"label", int64s({2})}},
  };
}

/// Debian's Python, when installed.
inline std::string python() { return std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : ""; }

/// A program's exit status and what it printed on stdout.
struct RunResult {
  int status = -1;
  std::string out;
};

/// Runs a shell command, capturing stdout (stderr is redirected by the command if wanted).
inline RunResult run(const std::string& command) {
  RunResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buf{};
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) result.out.append(buf.data(), n);
  const int raw = ::pclose(pipe);
  result.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return result;
}

/// Quotes a path for the shell.
inline std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace kestrel::testing
