#include "framework/io/compression.h"

#include <gtest/gtest.h>

#include <string>

#include "framework/core/error.h"
#include "framework/io/record_writer.h"
#include "tests/support/error_message.h"

namespace kestrel::io {
namespace {

using kestrel::testing::contains;
using kestrel::testing::error_message;

TEST(Compression, ParsesTensorFlowNamesInAnyCase) {
  EXPECT_EQ(compression_from_name(""), Compression::none);
  EXPECT_EQ(compression_from_name("NONE"), Compression::none);
  EXPECT_EQ(compression_from_name("gzip"), Compression::gzip);
  EXPECT_EQ(compression_from_name("GZIP"), Compression::gzip);
  EXPECT_EQ(compression_from_name("Zlib"), Compression::zlib);
  EXPECT_EQ(compression_from_name_or_auto("auto"), std::nullopt);
  EXPECT_EQ(compression_from_name_or_auto("AUTO"), std::nullopt);
  EXPECT_EQ(compression_from_name_or_auto("ZLIB"), Compression::zlib);
  EXPECT_EQ(to_string(Compression::gzip), "GZIP");
  EXPECT_EQ(compression_from_name(to_string(Compression::none)), Compression::none);
}

TEST(Compression, UnknownNamesListTheChoices) {
  const std::string m = error_message<ValueError>([] { compression_from_name("bz2"); });
  EXPECT_TRUE(contains(m, "'bz2'")) << m;
  EXPECT_TRUE(contains(m, "GZIP")) << m;
  EXPECT_TRUE(contains(m, "ZLIB")) << m;
  EXPECT_FALSE(contains(m, "auto")) << m;  // the writer cannot detect anything
  const std::string a = error_message<ValueError>([] { compression_from_name_or_auto("lz4"); });
  EXPECT_TRUE(contains(a, "'lz4'")) << a;
  EXPECT_TRUE(contains(a, "auto")) << a;
}

TEST(Compression, DetectsGzipAndZlibHeaders) {
  EXPECT_EQ(detect_compression(std::string("\x1f\x8b\x08\x00", 4)), Compression::gzip);
  EXPECT_EQ(detect_compression(std::string("\x78\x9c", 2)), Compression::zlib);  // default level
  EXPECT_EQ(detect_compression(std::string("\x78\x01", 2)), Compression::zlib);  // level 1
  EXPECT_EQ(detect_compression(std::string("\x78\xda", 2)), Compression::zlib);  // level 9
  EXPECT_EQ(detect_compression(std::string("\x58\x85", 2)), Compression::zlib);  // 16 KiB window
  EXPECT_EQ(detect_compression(std::string("\x78\x9d", 2)), Compression::none);  // check fails
  EXPECT_EQ(detect_compression(std::string("\x79\x9c", 2)), Compression::none);  // CM is not 8
  EXPECT_EQ(detect_compression(""), Compression::none);
  EXPECT_EQ(detect_compression("x"), Compression::none);
  EXPECT_EQ(detect_compression("plain text, not a record"), Compression::none);
}

TEST(Compression, APlainFileThatLooksLikeZlibIsPlain) {
  // A first record of 376 bytes starts with 78 01, a valid zlib header; its length CRC settles it.
  std::string framed;
  append_record(framed, std::string(376, 'k'));
  ASSERT_EQ(framed.substr(0, 2), std::string("\x78\x01", 2));
  EXPECT_EQ(detect_compression(framed.substr(0, 2)), Compression::zlib);
  EXPECT_EQ(detect_compression(framed), Compression::none);
  // And one of 0x8b1f bytes starts with the gzip magic.
  std::string gz;
  append_record(gz, std::string(0x8b1f, 'g'));
  ASSERT_EQ(gz.substr(0, 2), std::string("\x1f\x8b", 2));
  EXPECT_EQ(detect_compression(gz.substr(0, 12)), Compression::none);
}

}  // namespace
}  // namespace kestrel::io
