// Reads TFRecord files record by record, checking both CRCs of every record.
//
//   io::RecordReader reader("train.tfrecord.gz");    // none, GZIP or ZLIB, detected from the content
//   std::string record;
//   while (true) {
//     try {
//       if (!reader.read(record)) break;            // false at the end of the file
//       use(record);
//     } catch (const IOError& e) {                  // corrupt or truncated: names the file and offset
//       log(e.what());                              // the reader has moved on: keep reading
//     }
//   }
//
// Errors and where they leave the reader:
//   - the data CRC does not match: the record is skipped, the reader is at the next record;
//   - the length CRC does not match: the length cannot be trusted, so no later record can be
//     found; the reader is at the end;
//   - the file (or its compressed stream) ends inside a record, or the stream is corrupt: at the end.
// Offsets count bytes of the uncompressed stream, where record k starts at the sum of the sizes
// (length + 16) of the records before it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "framework/io/compressed_file.h"
#include "framework/io/compression.h"

namespace kestrel::io {

struct RecordReaderOptions {
  /// nullopt: detect from the file's first bytes (see detect_compression).
  std::optional<Compression> compression;
  /// Bytes read from the file at a time.
  std::size_t buffer_size = 256 * 1024;
};

class RecordReader {
 public:
  /// Opens the file; throws IOError naming it when it cannot be opened.
  explicit RecordReader(std::string path, RecordReaderOptions options = {});

  /// Reads the next record into record and returns true; false at the end of the file. Throws
  /// IOError naming the file and the record's offset when the record is corrupt or truncated.
  bool read(std::string& record);
  /// The next record, or nullopt at the end of the file; throws as read() does.
  std::optional<std::string> next();

  const std::string& path() const { return file_.path(); }
  /// The compression given, or the one detected.
  Compression compression() const { return file_.compression(); }
  /// Offset in the uncompressed stream of the next record.
  std::uint64_t offset() const { return offset_; }
  /// True once the end was reached, or after an error that leaves nothing more to read.
  bool at_end() const { return at_end_; }
  /// Records returned so far (skipped corrupt ones not counted).
  std::uint64_t records_read() const { return records_; }

 private:
  // Reads exactly size bytes unless the stream ends; returns how many it read.
  std::size_t read_exact(void* out, std::size_t size, std::uint64_t record_offset);
  [[noreturn]] void fail(std::uint64_t record_offset, const std::string& problem, bool can_continue);

  CompressedFileReader file_;
  std::uint64_t offset_ = 0;
  std::uint64_t records_ = 0;
  bool at_end_ = false;
};

}  // namespace kestrel::io
