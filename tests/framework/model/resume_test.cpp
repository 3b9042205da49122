// Training resumed from a checkpoint in a new process matches an uninterrupted run bit for bit.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "framework/layers/layers.h"
#include "framework/model/sequential.h"
#include "framework/saving/weights_file.h"

namespace kestrel {
namespace {

std::string scratch(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("kestrel_resume_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

int run(const std::string& args) {
  // Appended piece by piece: GCC 12 at -O1 warns falsely (-Warray-bounds) on a literal + string chain.
  std::string command = KESTREL_RESUME_PROBE;
  command += ' ';
  command += args;
  return std::system(command.c_str());
}

std::vector<Tensor> weights_in(const std::string& path) {
  // Load into a model of the same architecture (dropout has no weights).
  clear_session();
  Sequential model({layers::Dense(16, {.activation = "relu"}), layers::Dropout(0.25), layers::Dense(2)});
  model.build({1, 6});
  model.load_weights(path);
  return model.get_weights();
}

void expect_bitwise_equal(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].to_vector<float>(), b[i].to_vector<float>()) << "weight " << i;
  }
}

TEST(Resume, CheckpointInANewProcessMatchesAnUninterruptedRun) {
  for (const std::string ext : {".weights.h5", ".h5"}) {
    const std::string straight = scratch("straight" + ext);
    const std::string checkpoint = scratch("epoch2" + ext);
    const std::string resumed = scratch("resumed" + ext);
    ASSERT_EQ(run("straight " + straight), 0);
    ASSERT_EQ(run("first " + checkpoint), 0);
    ASSERT_EQ(run("resume " + checkpoint + " " + resumed), 0);
    expect_bitwise_equal(weights_in(straight), weights_in(resumed));
    // And the checkpoint really is mid-training: it differs from the end state.
    EXPECT_NE(weights_in(checkpoint)[0].to_vector<float>(), weights_in(straight)[0].to_vector<float>()) << ext;
  }
  std::filesystem::remove_all(std::filesystem::path(scratch("x")).parent_path());
}

}  // namespace
}  // namespace kestrel
