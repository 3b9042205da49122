// A path for a file a models test writes (weights, checkpoints): in a directory of its own per
// process and test, so parallel ctest runs never share one.
//
//   model.save_weights(scratch_file("gpt.weights.h5"));
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace kestrel::testing {

/// <temp>/kestrel_models_<pid>_<test name>/<name>, its directory made.
inline std::string scratch_file(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const auto dir =
      std::filesystem::temp_directory_path() / ("kestrel_models_" + std::to_string(::getpid()) + "_" + info->name());
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

}  // namespace kestrel::testing
