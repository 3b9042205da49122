#include "framework/io/record_reader.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/io/crc32c.h"
#include "framework/io/record_writer.h"
#include "tests/framework/io/io_test_support.h"
#include "tests/support/error_message.h"

namespace kestrel::io {
namespace {

using kestrel::testing::contains;
using kestrel::testing::error_message;
using kestrel::testing::noise;
using kestrel::testing::read_all;
using kestrel::testing::read_file;
using kestrel::testing::ScratchDir;
using kestrel::testing::write_file;

const Compression kCompressions[] = {Compression::none, Compression::gzip, Compression::zlib};

std::string framed(const std::vector<std::string>& records) {
  std::string out;
  for (const auto& r : records) append_record(out, r);
  return out;
}

// Offset of each record in the uncompressed stream, plus the stream's end.
std::vector<std::size_t> record_offsets(const std::vector<std::string>& records) {
  std::vector<std::size_t> at{0};
  for (const auto& r : records) at.push_back(at.back() + r.size() + kRecordOverhead);
  return at;
}

TEST(RecordReader, RoundTripsEachCompression) {
  ScratchDir dir;
  const std::vector<std::string> records{"", "a", std::string(1000, 'x'), std::string("\0\1\2", 3), noise(70000, 9)};
  for (Compression c : kCompressions) {
    const std::string path = dir / "data.tfrecord";
    {
      RecordWriter writer(path, {.compression = c});
      for (const auto& r : records) writer.write(r);
      EXPECT_EQ(writer.compression(), c);
    }
    RecordReader reader(path);
    EXPECT_EQ(reader.compression(), c);
    std::vector<std::string> back;
    std::string record;
    const auto offsets = record_offsets(records);
    while (true) {
      EXPECT_EQ(reader.offset(), offsets[back.size()]);
      if (!reader.read(record)) break;
      back.push_back(record);
    }
    EXPECT_EQ(back, records) << to_string(c);
    EXPECT_TRUE(reader.at_end());
    EXPECT_EQ(reader.records_read(), records.size());
    EXPECT_FALSE(reader.read(record));
    EXPECT_EQ(read_all(path, {.compression = c}).records, records);
  }
}

TEST(RecordReader, UncompressedOutputIsExactlyTheFraming) {
  ScratchDir dir;
  const std::string path = dir / "plain.tfrecord";
  const std::vector<std::string> records{"hello", "", "world!"};
  {
    RecordWriter writer(path);
    for (const auto& r : records) writer.write(r);
  }
  EXPECT_EQ(read_file(path), framed(records));
}

TEST(RecordReader, EmptyFileHasNoRecords) {
  ScratchDir dir;
  write_file(dir / "empty", "");
  const auto result = read_all(dir / "empty");
  EXPECT_TRUE(result.records.empty());
  EXPECT_EQ(result.error, "");
}

TEST(RecordReader, LargeRecordsAcrossGrowthSteps) {
  ScratchDir dir;
  const std::vector<std::string> records{noise(3 << 20, 5), "tail"};
  for (Compression c : {Compression::none, Compression::gzip}) {
    {
      RecordWriter writer(dir / "big", {.compression = c, .compression_level = 1});
      for (const auto& r : records) writer.write(r);
    }
    EXPECT_EQ(read_all(dir / "big").records, records) << to_string(c);
  }
}

// Every byte of a small file, corrupted in turn: each must raise an error that names the file and
// the offset of the record the byte belongs to; after a data-CRC error reading goes on.
TEST(RecordReader, CorruptionAtEveryByteIsCaught) {
  ScratchDir dir;
  const std::vector<std::string> records{"ab", "", "xyz"};
  const std::string good = framed(records);
  const auto offsets = record_offsets(records);
  const std::string path = dir / "corrupt.tfrecord";
  for (std::size_t pos = 0; pos < good.size(); ++pos) {
    std::size_t k = 0;
    while (pos >= offsets[k + 1]) ++k;
    const bool in_length = pos - offsets[k] < 12;
    std::string bad = good;
    bad[pos] = static_cast<char>(bad[pos] ^ 0x5a);
    write_file(path, bad);

    RecordReader reader(path, {.compression = Compression::none});
    std::vector<std::string> before;
    for (std::size_t i = 0; i < k; ++i) before.push_back(*reader.next());
    ASSERT_EQ(before, std::vector<std::string>(records.begin(), records.begin() + static_cast<long>(k)));
    std::string record;
    const std::string m = error_message<IOError>([&] { reader.read(record); });
    SCOPED_TRACE("byte " + std::to_string(pos) + ": " + m);
    EXPECT_TRUE(contains(m, path));
    EXPECT_TRUE(contains(m, "record at offset " + std::to_string(offsets[k]) + ":"));
    EXPECT_TRUE(contains(m, in_length ? "length CRC does not match" : "data CRC does not match"));
    if (in_length) {
      EXPECT_TRUE(reader.at_end());
      EXPECT_FALSE(reader.read(record));
    } else {
      // Positioned at the next record: the rest of the file reads as written.
      EXPECT_EQ(reader.offset(), offsets[k + 1]);
      std::vector<std::string> after;
      while (auto r = reader.next()) after.push_back(*r);
      EXPECT_EQ(after, std::vector<std::string>(records.begin() + static_cast<long>(k) + 1, records.end()));
    }
  }
}

// The file cut at every length: clean at record boundaries, else an error naming the offset of
// the cut record, after which the reader is at the end.
TEST(RecordReader, TruncationAtEveryLengthIsCaught) {
  ScratchDir dir;
  const std::vector<std::string> records{"ab", "", "xyz"};
  const std::string good = framed(records);
  const auto offsets = record_offsets(records);
  const std::string path = dir / "cut.tfrecord";
  for (std::size_t length = 0; length < good.size(); ++length) {
    write_file(path, good.substr(0, length));
    std::size_t complete = 0;
    while (offsets[complete + 1] <= length) ++complete;
    RecordReader reader(path);
    std::vector<std::string> got;
    std::string error;
    try {
      while (auto r = reader.next()) got.push_back(*r);
    } catch (const IOError& e) {
      error = e.what();
    }
    SCOPED_TRACE("length " + std::to_string(length) + ": " + error);
    EXPECT_EQ(got, std::vector<std::string>(records.begin(), records.begin() + static_cast<long>(complete)));
    if (length == offsets[complete]) {
      EXPECT_EQ(error, "");
    } else {
      EXPECT_TRUE(contains(error, path));
      EXPECT_TRUE(contains(error, "record at offset " + std::to_string(offsets[complete]) + ": truncated"));
      EXPECT_TRUE(reader.at_end());
      std::string record;
      EXPECT_FALSE(reader.read(record));
    }
  }
}

// Compressed files cut at every length never end cleanly and never give a wrong record.
TEST(RecordReader, CompressedTruncationAtEveryLengthIsCaught) {
  ScratchDir dir;
  const std::vector<std::string> records{"ab", "", "xyz", std::string(40, 'q')};
  for (Compression c : {Compression::gzip, Compression::zlib}) {
    const std::string path = dir / "whole";
    {
      RecordWriter writer(path, {.compression = c});
      for (const auto& r : records) writer.write(r);
    }
    const std::string whole = read_file(path);
    for (std::size_t length = 0; length < whole.size(); ++length) {
      write_file(dir / "cut", whole.substr(0, length));
      const auto result = read_all(dir / "cut", {.compression = c});
      SCOPED_TRACE(std::string(to_string(c)) + " length " + std::to_string(length) + ": " + result.error);
      EXPECT_TRUE(contains(result.error, dir / "cut"));
      EXPECT_TRUE(contains(result.error, "uncompressed " + std::string(to_string(c)) + " stream"));
      ASSERT_LE(result.records.size(), records.size());
      EXPECT_EQ(result.records,
                std::vector<std::string>(records.begin(), records.begin() + static_cast<long>(result.records.size())));
    }
  }
}

// Compressed files corrupted at every byte either fail or still give exactly the records written
// (the gzip header's time stamp, for one, is not checked by anything and changes nothing).
TEST(RecordReader, CompressedCorruptionNeverGivesWrongRecords) {
  ScratchDir dir;
  const std::vector<std::string> records{"ab", "", "xyz", std::string(40, 'q')};
  for (Compression c : {Compression::gzip, Compression::zlib}) {
    const std::string path = dir / "whole";
    {
      RecordWriter writer(path, {.compression = c});
      for (const auto& r : records) writer.write(r);
    }
    const std::string whole = read_file(path);
    int failures = 0;
    for (std::size_t pos = 0; pos < whole.size(); ++pos) {
      std::string bad = whole;
      bad[pos] = static_cast<char>(bad[pos] ^ 0x5a);
      write_file(dir / "bad", bad);
      const auto result = read_all(dir / "bad", {.compression = c});
      SCOPED_TRACE(std::string(to_string(c)) + " byte " + std::to_string(pos) + ": " + result.error);
      if (result.error.empty()) {
        EXPECT_EQ(result.records, records);
      } else {
        ++failures;
        ASSERT_LE(result.records.size(), records.size());
        EXPECT_EQ(result.records, std::vector<std::string>(records.begin(),
                                                           records.begin() + static_cast<long>(result.records.size())));
      }
    }
    EXPECT_GT(failures, static_cast<int>(whole.size()) / 2);
  }
}

TEST(RecordReader, DataCrcErrorInACompressedFileMovesOn) {
  ScratchDir dir;
  std::string stream = framed({"one", "two", "three"});
  stream[16 + 3 + 12] ^= 1;  // first data byte of "two"
  const std::string path = dir / "bad.z";
  {
    CompressedFileWriter out(path, {.compression = Compression::zlib});
    out.write(stream);
  }
  RecordReader reader(path);
  EXPECT_EQ(*reader.next(), "one");
  const std::string m = error_message<IOError>([&] { reader.next(); });
  EXPECT_TRUE(contains(m, "record at offset 19 of the uncompressed ZLIB stream: corrupt")) << m;
  EXPECT_EQ(*reader.next(), "three");
  EXPECT_FALSE(reader.next());
  EXPECT_EQ(reader.records_read(), 2u);
}

TEST(RecordReader, AHugeLengthInATruncatedFileIsNotAllocated) {
  ScratchDir dir;
  std::string header(8, '\0');
  header[5] = 1;  // 2^40 bytes, with a valid length CRC
  const std::uint32_t crc = masked_crc32c(header);
  for (int i = 0; i < 4; ++i) header.push_back(static_cast<char>((crc >> (8 * i)) & 0xffu));
  write_file(dir / "huge", header + "only a few bytes");
  const auto result = read_all(dir / "huge");
  EXPECT_TRUE(contains(result.error, "truncated: the file ends inside the data (16 of 1099511627776 bytes)"))
      << result.error;
}

TEST(RecordReader, ForcingNoCompressionOnACompressedFileSaysWhatToCheck) {
  ScratchDir dir;
  { RecordWriter(dir / "x.gz", {.compression = Compression::gzip}).write("payload"); }
  const auto result = read_all(dir / "x.gz", {.compression = Compression::none});
  EXPECT_TRUE(contains(result.error, "record at offset 0: corrupt: the length CRC does not match")) << result.error;
  EXPECT_TRUE(contains(result.error, "compression type")) << result.error;
  EXPECT_EQ(read_all(dir / "x.gz").records, std::vector<std::string>{"payload"});
}

TEST(RecordReader, MissingFileNamesIt) {
  const std::string m = error_message<IOError>([] { RecordReader("/nonexistent-dir/data.tfrecord"); });
  EXPECT_TRUE(contains(m, "/nonexistent-dir/data.tfrecord")) << m;
}

TEST(RecordWriter, CompressedAppendAndFlush) {
  ScratchDir dir;
  const std::string path = dir / "events.gz";
  { RecordWriter(path, {.compression = Compression::gzip}).write("one"); }
  {
    RecordWriter writer(path, {.append = true, .compression = Compression::gzip});
    writer.write("two");
    writer.flush();
    // Flushed but not closed: both records are there, the open stream's end is not yet.
    const auto live = read_all(path);
    EXPECT_EQ(live.records, (std::vector<std::string>{"one", "two"}));
    EXPECT_TRUE(contains(live.error, "truncated")) << live.error;
  }
  const auto done = read_all(path);
  EXPECT_EQ(done.records, (std::vector<std::string>{"one", "two"}));
  EXPECT_EQ(done.error, "");
  EXPECT_THROW(RecordWriter(dir / "z", {.append = true, .compression = Compression::zlib}), ValueError);
}

}  // namespace
}  // namespace kestrel::io
