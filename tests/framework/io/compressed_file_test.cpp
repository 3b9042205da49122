#include "framework/io/compressed_file.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>
#include <vector>

#include "framework/core/error.h"
#include "tests/framework/io/io_test_support.h"
#include "tests/support/error_message.h"

namespace kestrel::io {
namespace {

using kestrel::testing::contains;
using kestrel::testing::error_message;
using kestrel::testing::noise;
using kestrel::testing::read_file;
using kestrel::testing::ScratchDir;
using kestrel::testing::write_file;

const Compression kAll[] = {Compression::none, Compression::gzip, Compression::zlib};

std::string read_stream(const std::string& path, CompressedFileReaderOptions options = {}, std::size_t chunk = 1000) {
  CompressedFileReader in(path, options);
  std::string out, buf(chunk, '\0');
  while (std::size_t n = in.read(buf.data(), buf.size())) out.append(buf.data(), n);
  EXPECT_EQ(in.position(), out.size());
  EXPECT_EQ(in.read(buf.data(), buf.size()), 0u);  // stays at the end
  return out;
}

// Inflates with zlib's one-shot API, independently of the streaming reader.
std::string inflate_all(const std::string& bytes, int window_bits) {
  z_stream s{};
  EXPECT_EQ(inflateInit2(&s, window_bits), Z_OK);
  std::string out;
  std::vector<unsigned char> buf(1 << 16);
  s.next_in = reinterpret_cast<unsigned char*>(const_cast<char*>(bytes.data()));
  s.avail_in = static_cast<uInt>(bytes.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    s.next_out = buf.data();
    s.avail_out = static_cast<uInt>(buf.size());
    rc = inflate(&s, Z_NO_FLUSH);
    out.append(reinterpret_cast<char*>(buf.data()), buf.size() - s.avail_out);
  }
  EXPECT_EQ(rc, Z_STREAM_END);
  inflateEnd(&s);
  return out;
}

TEST(CompressedFile, RoundTripsEachCompressionAcrossBufferBoundaries) {
  ScratchDir dir;
  // Larger than the buffers, half noise and half runs, written in uneven pieces.
  const std::string data = noise(70000, 1) + std::string(50000, 'r') + noise(3, 2);
  for (Compression c : kAll) {
    const std::string path = dir / ("data_" + std::string(to_string(c)));
    {
      CompressedFileWriter out(path, {.compression = c, .buffer_size = 4096});
      for (std::size_t at = 0; at < data.size();) {
        const std::size_t n = std::min<std::size_t>(data.size() - at, 1 + (at % 9973));
        out.write(std::string_view(data).substr(at, n));
        at += n;
      }
      EXPECT_EQ(out.bytes_written(), data.size());
      EXPECT_EQ(out.compression(), c);
    }
    EXPECT_EQ(read_stream(path, {.compression = c, .buffer_size = 4096}), data) << to_string(c);
    EXPECT_EQ(read_stream(path, {}, 77), data) << to_string(c) << " detected";
    EXPECT_EQ(CompressedFileReader(path).compression(), c);
  }
}

TEST(CompressedFile, WritesStreamsZlibItselfReads) {
  ScratchDir dir;
  const std::string data = noise(5000, 3) + std::string(5000, 'z');
  for (Compression c : {Compression::gzip, Compression::zlib}) {
    const std::string path = dir / "x";
    CompressedFileWriter out(path, {.compression = c, .level = 9});
    out.write(data);
    out.close();
    const std::string bytes = read_file(path);
    EXPECT_LT(bytes.size(), data.size());
    EXPECT_EQ(inflate_all(bytes, c == Compression::gzip ? 15 + 16 : 15), data) << to_string(c);
  }
}

TEST(CompressedFile, EmptyStreamsAreValid) {
  ScratchDir dir;
  for (Compression c : kAll) {
    const std::string path = dir / "empty";
    { CompressedFileWriter out(path, {.compression = c}); }
    EXPECT_EQ(read_file(path).empty(), c == Compression::none);
    EXPECT_EQ(read_stream(path, {.compression = c}), "");
  }
}

TEST(CompressedFile, FlushMakesWrittenBytesReadable) {
  ScratchDir dir;
  for (Compression c : {Compression::gzip, Compression::zlib}) {
    const std::string path = dir / "live";
    CompressedFileWriter out(path, {.compression = c});
    out.write("first part ");
    out.flush();
    // The stream has no end yet: a reader gets every byte, then learns the stream is unfinished.
    CompressedFileReader in(path, {.compression = c});
    std::string buf(11, '\0');
    ASSERT_EQ(in.read(buf.data(), buf.size()), 11u);
    EXPECT_EQ(buf, "first part ");
    const std::string m = error_message<StreamError>([&] { in.read(buf.data(), 1); });
    EXPECT_TRUE(contains(m, "truncated")) << m;
    out.write("second");
    out.close();
    EXPECT_EQ(read_stream(path), "first part second");
  }
}

TEST(CompressedFile, AppendingToGzipAddsAMemberReadAsOneStream) {
  ScratchDir dir;
  const std::string path = dir / "log.gz";
  { CompressedFileWriter(path, {.compression = Compression::gzip}).write("one,"); }
  { CompressedFileWriter(path, {.compression = Compression::gzip, .append = true}).write("two"); }
  EXPECT_EQ(read_stream(path), "one,two");
  EXPECT_EQ(inflate_all(read_file(path), 15 + 16), "one,");  // zlib alone stops after the first member
  const std::string m = error_message<ValueError>(
      [&] { CompressedFileWriter(dir / "z", {.compression = Compression::zlib, .append = true}); });
  EXPECT_TRUE(contains(m, "ZLIB")) << m;
  EXPECT_TRUE(contains(m, "GZIP")) << m;
}

TEST(CompressedFile, TruncatedAndCorruptStreamsRaiseStreamErrors) {
  ScratchDir dir;
  const std::string path = dir / "data.gz";
  { CompressedFileWriter(path, {.compression = Compression::gzip}).write(noise(3000, 4)); }
  const std::string whole = read_file(path);
  write_file(path, whole.substr(0, whole.size() / 2));
  std::string m = error_message<StreamError>([&] { read_stream(path); });
  EXPECT_TRUE(contains(m, path)) << m;
  EXPECT_TRUE(contains(m, "GZIP stream ends before its end marker")) << m;

  std::string corrupt = whole;
  corrupt[whole.size() - 6] ^= 0x40;  // inside the trailer's CRC-32
  write_file(path, corrupt);
  try {
    read_stream(path);
    FAIL() << "expected StreamError";
  } catch (const StreamError& e) {
    EXPECT_TRUE(contains(e.what(), path)) << e.what();
    EXPECT_TRUE(contains(e.detail(), "GZIP stream is corrupt")) << e.detail();
    EXPECT_FALSE(contains(e.detail(), path));
  }
}

TEST(CompressedFile, ErrorsNameTheFile) {
  ScratchDir dir;
  std::string m = error_message<IOError>([] { CompressedFileReader("/nonexistent-dir/in.gz"); });
  EXPECT_TRUE(contains(m, "/nonexistent-dir/in.gz")) << m;
  m = error_message<IOError>([] { CompressedFileWriter("/nonexistent-dir/out.gz"); });
  EXPECT_TRUE(contains(m, "/nonexistent-dir/out.gz")) << m;
  m = error_message<ValueError>(
      [&] { CompressedFileWriter(dir / "x", {.compression = Compression::gzip, .level = 12}); });
  EXPECT_TRUE(contains(m, "level 12")) << m;
  CompressedFileWriter out(dir / "closed", {.compression = Compression::zlib});
  out.close();
  out.close();
  EXPECT_FALSE(out.is_open());
  m = error_message<IOError>([&] { out.write("late"); });
  EXPECT_TRUE(contains(m, "write after close")) << m;
}

TEST(CompressedFile, MovesKeepTheStream) {
  ScratchDir dir;
  const std::string path = dir / "moved.z";
  CompressedFileWriter a(path, {.compression = Compression::zlib});
  a.write("abc");
  CompressedFileWriter b = std::move(a);
  b.write("def");
  CompressedFileWriter c(dir / "other", {});
  c = std::move(b);
  c.write("ghi");
  c.close();
  CompressedFileReader r(path);
  CompressedFileReader moved = std::move(r);
  std::string buf(16, '\0');
  buf.resize(moved.read(buf.data(), buf.size()));
  EXPECT_EQ(buf, "abcdefghi");
}

}  // namespace
}  // namespace kestrel::io
