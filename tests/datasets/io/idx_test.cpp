#include "datasets/io/idx.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "framework/core/error.h"
#include "tests/support/error_message.h"

namespace kestrel::datasets {
namespace {

using testing::contains;
using testing::error_message;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("kestrel_idx_" + std::to_string(::getpid()) + "_" + name)).string();
}

TEST(Idx, RoundTripsPlainAndGzip) {
  Tensor values = Tensor::from_vector<float>({0, 1, 2, 253, 254, 255}, {2, 3});
  for (const std::string name : {"plain.idx", "packed.idx.gz"}) {
    std::string path = temp_path(name);
    write_idx_ubyte(path, values);
    Tensor back = read_idx(path, DType::float32);
    EXPECT_EQ(back.shape(), (Shape{2, 3}));
    EXPECT_EQ(back.to_vector<float>(), values.to_vector<float>());
    EXPECT_EQ(read_idx(path, DType::int64).to_vector<std::int64_t>(),
              (std::vector<std::int64_t>{0, 1, 2, 253, 254, 255}));
    std::remove(path.c_str());
  }
}

TEST(Idx, ReadsBigEndianIntegers) {
  std::string path = temp_path("ints.idx");
  {
    std::ofstream out(path, std::ios::binary);
    const unsigned char bytes[] = {0, 0, 0x0C, 1, 0, 0, 0, 2, 0xFF, 0xFF, 0xFF, 0xFE, 0, 0, 1, 0};
    out.write(reinterpret_cast<const char*>(bytes), sizeof bytes);
  }
  EXPECT_EQ(read_idx(path, DType::int32).to_vector<std::int32_t>(), (std::vector<std::int32_t>{-2, 256}));
  std::remove(path.c_str());
}

TEST(Idx, TruncatedFileNamesFileAndOffset) {
  std::string path = temp_path("short.idx");
  {
    std::ofstream out(path, std::ios::binary);
    const unsigned char bytes[] = {0, 0, 0x08, 1, 0, 0, 0, 10, 1, 2, 3};
    out.write(reinterpret_cast<const char*>(bytes), sizeof bytes);
  }
  std::string m = error_message<IOError>([&] { read_idx(path, DType::float32); });
  EXPECT_TRUE(contains(m, path)) << m;
  EXPECT_TRUE(contains(m, "byte 11")) << m;  // 8 header bytes + 3 of the 10 data bytes
  EXPECT_TRUE(contains(m, "truncated")) << m;
  std::remove(path.c_str());
}

TEST(Idx, BadMagicIsRejected) {
  std::string path = temp_path("bad.idx");
  {
    std::ofstream out(path, std::ios::binary);
    out << "not an idx file";
  }
  std::string m = error_message<IOError>([&] { read_idx(path, DType::float32); });
  EXPECT_TRUE(contains(m, "is not an IDX file")) << m;
  std::remove(path.c_str());
}

TEST(Idx, MissingFileIsAnIOError) { EXPECT_THROW(read_idx(temp_path("absent.idx"), DType::float32), IOError); }

}  // namespace
}  // namespace kestrel::datasets
