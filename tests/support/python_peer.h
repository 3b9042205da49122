// Test support: checking Kestrel's files with Python's readers (Debian's /usr/bin/python3, which
// sees python3-h5py; the python3 on PATH may be another one).
//
//   if (!have_python_module("h5py")) GTEST_SKIP() << "needs python3-h5py";
//   std::string out = run_python_file(script_path, archive_path);
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace kestrel::testing {

/// True when /usr/bin/python3 runs and can import `module`.
inline bool have_python_module(const std::string& module) {
  return std::system(("/usr/bin/python3 -c 'import " + module + "' >/dev/null 2>&1").c_str()) == 0;
}

/// Runs the Python script at script_path with arguments; returns its output (stdout and stderr),
/// failing the test on a non-zero exit.
inline std::string run_python_file(const std::string& script_path, const std::string& args) {
  const std::string command = "/usr/bin/python3 " + script_path + " " + args + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "cannot run " << command;
    return {};
  }
  std::string out;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  EXPECT_EQ(::pclose(pipe), 0) << command << " failed:\n" << out;
  return out;
}

}  // namespace kestrel::testing
