#include "framework/io/record_reader.h"

#include <algorithm>

#include "framework/core/error.h"
#include "framework/io/crc32c.h"
#include "framework/io/little_endian.h"

namespace kestrel::io {
namespace {

constexpr std::size_t kHeaderSize = 12;  // uint64 length + uint32 masked CRC of it
constexpr std::size_t kFooterSize = 4;   // uint32 masked CRC of the data
// A length is only trusted as far as the data is really there: the record grows in steps of at
// least this, so a damaged or hostile length cannot make the reader allocate terabytes up front.
constexpr std::size_t kGrowStep = std::size_t{1} << 20;

std::string hex(std::uint32_t v) {
  std::string out = "0x";
  for (int shift = 28; shift >= 0; shift -= 4) out.push_back("0123456789abcdef"[(v >> shift) & 0xfu]);
  return out;
}

}  // namespace

RecordReader::RecordReader(std::string path, RecordReaderOptions options)
    : file_(std::move(path), {.compression = options.compression, .buffer_size = options.buffer_size}) {}

void RecordReader::fail(std::uint64_t record_offset, const std::string& problem, bool can_continue) {
  if (!can_continue) at_end_ = true;
  std::string where = "record at offset " + std::to_string(record_offset);
  if (compression() != Compression::none)
    where += " of the uncompressed " + std::string(to_string(compression())) + " stream";
  throw IOError("record file '" + path() + "': " + where + ": " + problem);
}

std::size_t RecordReader::read_exact(void* out, std::size_t size, std::uint64_t record_offset) {
  try {
    return file_.read(out, size);
  } catch (const StreamError& e) {
    fail(record_offset, e.detail(), false);
  }
}

bool RecordReader::read(std::string& record) {
  if (at_end_) return false;
  const std::uint64_t start = offset_;
  unsigned char header[kHeaderSize];
  const std::size_t got = read_exact(header, kHeaderSize, start);
  if (got == 0) {
    at_end_ = true;
    return false;
  }
  if (got < kHeaderSize) {
    fail(start,
         "truncated: the file ends inside the length header (" + std::to_string(got) + " of 12 bytes); " +
             "the records before it are intact",
         false);
  }
  const std::uint64_t length = load_le64(header);
  const std::uint32_t stored_length_crc = load_le32(header + 8);
  const std::uint32_t length_crc = masked_crc32c(header, 8);
  if (length_crc != stored_length_crc) {
    std::string problem = "corrupt: the length CRC does not match (stored " + hex(stored_length_crc) + ", computed " +
                          hex(length_crc) + "), so no later record can be found";
    if (start == 0 && compression() == Compression::none) {
      problem +=
          "; is this a TFRecord file, and is its compression type right? (GZIP and ZLIB are "
          "detected unless NONE is forced)";
    }
    fail(start, problem, false);
  }

  record.clear();
  std::uint64_t filled = 0;
  while (filled < length) {
    const std::uint64_t step = std::max<std::uint64_t>(filled, kGrowStep);
    const auto chunk = static_cast<std::size_t>(std::min<std::uint64_t>(length - filled, step));
    record.resize(static_cast<std::size_t>(filled) + chunk);
    const std::size_t n = read_exact(record.data() + filled, chunk, start);
    filled += n;
    if (n < chunk) {
      record.clear();
      fail(start,
           "truncated: the file ends inside the data (" + std::to_string(filled) + " of " + std::to_string(length) +
               " bytes); the records before it are intact",
           false);
    }
  }
  unsigned char footer[kFooterSize];
  const std::size_t footer_got = read_exact(footer, kFooterSize, start);
  if (footer_got < kFooterSize) {
    record.clear();
    fail(start,
         "truncated: the file ends inside the data CRC (" + std::to_string(footer_got) +
             " of 4 bytes); the records before it are intact",
         false);
  }
  offset_ = start + kHeaderSize + length + kFooterSize;
  const std::uint32_t stored_crc = load_le32(footer);
  const std::uint32_t crc = masked_crc32c(record.data(), record.size());
  if (crc != stored_crc) {
    record.clear();
    fail(start,
         "corrupt: the data CRC does not match (length " + std::to_string(length) + ", stored " + hex(stored_crc) +
             ", computed " + hex(crc) + "); the reader has moved on to the next record",
         true);
  }
  ++records_;
  return true;
}

std::optional<std::string> RecordReader::next() {
  std::string record;
  if (!read(record)) return std::nullopt;
  return record;
}

}  // namespace kestrel::io
