#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/io/crc32c.h"
#include "framework/io/record_writer.h"
#include "tests/framework/callbacks/test_support.h"

namespace kestrel::io {
namespace {

using kestrel::testing::parse_records;
using kestrel::testing::read_file;
using kestrel::testing::reference_crc32c;
using kestrel::testing::ScratchDir;

TEST(Crc32c, KnownVectors) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);  // the CRC catalogue's check value
  EXPECT_EQ(crc32c(""), 0u);
  // RFC 3720 (iSCSI) appendix B.4.
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  std::string ascending, descending;
  for (int i = 0; i < 32; ++i) {
    ascending.push_back(static_cast<char>(i));
    descending.push_back(static_cast<char>(31 - i));
  }
  EXPECT_EQ(crc32c(ascending), 0x46DD794Eu);
  EXPECT_EQ(crc32c(descending), 0x113FDB5Cu);
}

TEST(Crc32c, MatchesBitwiseDefinitionAtEveryLengthAndOffset) {
  std::string data;
  for (int i = 0; i < 300; ++i) data.push_back(static_cast<char>((i * 131 + 7) & 0xff));
  for (std::size_t offset = 0; offset < 9; ++offset) {
    for (std::size_t length = 0; offset + length <= data.size(); length += 7) {
      const std::string part = data.substr(offset, length);
      ASSERT_EQ(crc32c(part), reference_crc32c(part)) << "offset " << offset << " length " << length;
    }
  }
}

TEST(Crc32c, ExtendContinuesACrc) {
  const std::string a = "hello ", b = "world, this spans more than eight bytes";
  EXPECT_EQ(crc32c_extend(crc32c(a), b.data(), b.size()), crc32c(a + b));
}

TEST(Crc32c, MaskingRotatesAddsAndInverts) {
  const std::uint32_t crc = crc32c("foo");
  EXPECT_EQ(mask_crc32c(crc), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
  EXPECT_NE(mask_crc32c(crc), crc);
  EXPECT_NE(mask_crc32c(mask_crc32c(crc)), crc);
  EXPECT_EQ(unmask_crc32c(mask_crc32c(crc)), crc);
  EXPECT_EQ(unmask_crc32c(unmask_crc32c(mask_crc32c(mask_crc32c(crc)))), crc);
  EXPECT_EQ(masked_crc32c("foo"), mask_crc32c(crc));
  // A hand-computed case: crc32c("123456789") = 0xE3069283 rotated right by 15 is 0x2507C60D,
  // plus the delta 0xA282EAD8 is 0xC78AB0E5.
  EXPECT_EQ(masked_crc32c("123456789"), 0xC78AB0E5u);
}

TEST(RecordWriter, FramesRecordsAsTFRecord) {
  ScratchDir dir;
  const std::string path = dir / "data.tfrecord";
  const std::vector<std::string> records{"", "a", std::string(1000, 'x'), std::string("\0\1\2", 3)};
  {
    RecordWriter writer(path);
    for (const auto& r : records) writer.write(r);
    EXPECT_EQ(writer.records_written(), records.size());
    writer.flush();
  }
  const std::string stream = read_file(path);
  std::size_t expected_size = 0;
  for (const auto& r : records) expected_size += r.size() + kRecordOverhead;
  EXPECT_EQ(stream.size(), expected_size);
  EXPECT_EQ(parse_records(stream), records);
  // The first record is empty: its length field is eight zero bytes.
  EXPECT_EQ(stream.substr(0, 8), std::string(8, '\0'));
}

TEST(RecordWriter, AppendsWhenAsked) {
  ScratchDir dir;
  const std::string path = dir / "data.tfrecord";
  { RecordWriter(path).write("one"); }
  { RecordWriter(path, {.append = true}).write("two"); }
  EXPECT_EQ(parse_records(read_file(path)), (std::vector<std::string>{"one", "two"}));
  { RecordWriter(path).write("three"); }
  EXPECT_EQ(parse_records(read_file(path)), (std::vector<std::string>{"three"}));
}

TEST(RecordWriter, AppendRecordFramesInMemory) {
  std::string framed;
  append_record(framed, "abc");
  append_record(framed, "de");
  EXPECT_EQ(parse_records(framed), (std::vector<std::string>{"abc", "de"}));
}

TEST(RecordWriter, ErrorsNameThePath) {
  try {
    RecordWriter writer("/nonexistent-dir/x.tfrecord");
    FAIL() << "expected IOError";
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/x.tfrecord"), std::string::npos);
  }
  ScratchDir dir;
  RecordWriter writer(dir / "closed.tfrecord");
  writer.close();
  writer.close();
  EXPECT_FALSE(writer.is_open());
  EXPECT_THROW(writer.write("late"), IOError);
}

}  // namespace
}  // namespace kestrel::io
