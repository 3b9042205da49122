// TFRecord framing, and a writer that appends framed records to a file, optionally compressed.
//
//   io::RecordWriter writer("train.tfrecord");
//   writer.write(example_bytes);         // uint64 length | masked crc | data | masked crc
//   writer.flush();                      // readers see every record written so far
//
//   io::RecordWriter zipped("train.tfrecord.gz", {.compression = io::Compression::gzip});
//
//   std::string framed;
//   io::append_record(framed, bytes);    // the same framing into memory
//
// Each record is: uint64 length, uint32 masked_crc32c(those 8 bytes), the data, uint32
// masked_crc32c(data), all little-endian. GZIP and ZLIB compress the whole stream of framed
// records, not each record. TensorBoard event files use this framing too. io::RecordReader reads
// these files back.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "framework/io/compressed_file.h"
#include "framework/io/compression.h"

namespace kestrel::io {

/// Bytes of framing around each record: 8 (length) + 4 + 4 (two CRCs).
inline constexpr std::size_t kRecordOverhead = 16;

/// Appends data to out as one framed TFRecord.
void append_record(std::string& out, std::string_view data);

struct RecordWriterOptions {
  /// Add to an existing file instead of replacing it (with GZIP, as a new member; not for ZLIB).
  bool append = false;
  /// Compress the whole stream with GZIP or ZLIB.
  Compression compression = Compression::none;
  /// zlib level for GZIP and ZLIB: -1 is zlib's default (6), 1 fastest, 9 smallest.
  int compression_level = -1;
};

class RecordWriter {
 public:
  /// Opens (creates or truncates) the file; throws IOError naming the path when it cannot.
  explicit RecordWriter(std::string path, RecordWriterOptions options = {});

  /// Appends one record; throws IOError when the write fails or the writer is closed.
  void write(std::string_view data);
  /// Pushes buffered records to the operating system, so a reader sees every record written so far.
  void flush() { file_.flush(); }
  /// Ends the stream and closes the file; later writes throw IOError. Closing twice is harmless.
  /// The destructor closes too, logging (not throwing) a failure.
  void close() { file_.close(); }

  bool is_open() const { return file_.is_open(); }
  const std::string& path() const { return file_.path(); }
  Compression compression() const { return file_.compression(); }
  /// Records written through this writer.
  std::uint64_t records_written() const { return records_; }

 private:
  CompressedFileWriter file_;
  std::uint64_t records_ = 0;
  std::string frame_;  // reused between writes
};

}  // namespace kestrel::io
