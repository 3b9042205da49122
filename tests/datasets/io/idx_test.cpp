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

std::string write_bytes(const std::string& name, const std::vector<unsigned char>& bytes) {
  std::string path = temp_path(name);
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return path;
}

// The header once sized the data buffer before any data was read: 8 bytes claiming 4 GiB
// allocated and zeroed 4 GiB before failing.
TEST(Idx, HugeDimsInAShortFileFailWithoutAllocatingThem) {
  const std::string path = write_bytes("huge.idx", {0, 0, 0x08, 1, 0xff, 0xff, 0xff, 0xff, 7});
  std::string m = error_message<IOError>([&] { read_idx(path, DType::float32); });
  EXPECT_TRUE(contains(m, "4294967295 bytes expected")) << m;
  EXPECT_TRUE(contains(m, "truncated")) << m;
  std::remove(path.c_str());
}

// Three large dims once let std::bad_alloc (or a ShapeError) escape.
TEST(Idx, DimsBeyondAnyFileAreAHeaderError) {
  std::vector<unsigned char> header = {0, 0, 0x0E, 3};  // doubles, rank 3
  header.insert(header.end(), 12, 0xff);                // three dims of 2^32 - 1
  const std::string path = write_bytes("overflow.idx", header);
  std::string m = error_message<IOError>([&] { read_idx(path, DType::float32); });
  EXPECT_TRUE(contains(m, path)) << m;
  EXPECT_TRUE(contains(m, "4294967295 x 4294967295 x 4294967295")) << m;
  std::remove(path.c_str());
}

// Float data read as integers was converted unchecked (undefined behaviour for NaN and 1e300).
TEST(Idx, FloatsOutsideTheIntegerTypeAreAnError) {
  // float32 elements 3.5, NaN (0x7fc00000) and 1e30 (0x7149f2ca).
  const std::string path = write_bytes(
      "floats.idx", {0, 0, 0x0D, 1, 0, 0, 0, 3, 0x40, 0x60, 0, 0, 0x7f, 0xc0, 0, 0, 0x71, 0x49, 0xf2, 0xca});
  std::string m = error_message<ValueError>([&] { read_idx(path, DType::int32); });
  EXPECT_TRUE(contains(m, path)) << m;
  EXPECT_TRUE(contains(m, "element 1 is nan, which int32 cannot hold")) << m;
  EXPECT_TRUE(contains(error_message<ValueError>([&] { read_idx(path, DType::int64); }), "element 1")) << m;
  EXPECT_EQ(read_idx(path, DType::float32).to_vector<float>()[0], 3.5f);
  std::remove(path.c_str());

  const std::string in_range = write_bytes("small.idx", {0, 0, 0x0D, 1, 0, 0, 0, 1, 0xc0, 0x60, 0, 0});  // -3.5
  EXPECT_EQ(read_idx(in_range, DType::int64).to_vector<std::int64_t>(), (std::vector<std::int64_t>{-3}));
  std::remove(in_range.c_str());
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
