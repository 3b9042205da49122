// Damaged weight files that libhdf5 opens: Kestrel's own checks refuse them before their data is read.
#include "framework/saving/hdf5_checks.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "framework/layers/dense.h"
#include "framework/model/sequential.h"
#include "tests/framework/saving/saving_test_util.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;
using testing::ScratchDir;

std::string little_endian_u64(std::uint64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>(v >> (8 * i));
  return out;
}

// Points every contiguous dataset of `size` bytes at `address`: a version 3 layout message is
// 03 01 <address, 8 bytes> <size, 8 bytes>. Returns how many it changed.
int move_datasets_of_size(std::string& file, std::uint64_t size, std::uint64_t address) {
  int moved = 0;
  const std::string size_bytes = little_endian_u64(size);
  for (std::size_t at = file.find("\x03\x01", 0, 2); at != std::string::npos; at = file.find("\x03\x01", at + 1, 2)) {
    if (at + 18 <= file.size() && file.compare(at + 10, 8, size_bytes) == 0) {
      file.replace(at + 2, 8, little_endian_u64(address));
      ++moved;
    }
  }
  return moved;
}

class Hdf5Checks : public ::testing::TestWithParam<const char*> {
 protected:
  std::string path() const { return dir_.file(std::string("damaged") + GetParam()); }
  ScratchDir dir_;
};

// A dataset whose data lies past the end of the file once reached libhdf5's read; the file
// opens, so only Kestrel's check stands between it and the read.
TEST_P(Hdf5Checks, DatasetDataPastTheEndOfTheFileIsRefused) {
  Sequential model({layers::Dense(3)});
  model.build({1, 4});
  model.save_weights(path());
  std::string file = testing::read_bytes(path());
  ASSERT_GE(move_datasets_of_size(file, 4 * 3 * sizeof(float), std::uint64_t{1} << 40), 1);
  testing::write_bytes(path(), file);

  const std::string m = error_message<IOError>([&] { model.load_weights(path()); });
  EXPECT_TRUE(contains(m, path())) << m;
  EXPECT_TRUE(contains(m, "damaged dataset")) << m;
  EXPECT_TRUE(contains(m, "run past the end of the file")) << m;
}

INSTANTIATE_TEST_SUITE_P(Layouts, Hdf5Checks, ::testing::Values(".weights.h5", ".h5"),
                         [](const auto& info) { return std::string(info.param[1] == 'w' ? "keras3" : "keras2"); });

}  // namespace
}  // namespace kestrel
