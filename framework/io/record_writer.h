// TFRecord framing, and a writer that appends framed records to a file.
//
//   io::RecordWriter writer("train.tfrecord");
//   writer.write(example_bytes);         // uint64 length | masked crc | data | masked crc
//   writer.flush();                      // readers see every record written so far
//
//   std::string framed;
//   io::append_record(framed, bytes);    // the same framing into memory (to compress the stream)
//
// Each record is: uint64 length, uint32 masked_crc32c(those 8 bytes), the data, uint32
// masked_crc32c(data), all little-endian. TensorBoard event files use this framing too.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

namespace kestrel::io {

/// Bytes of framing around each record: 8 (length) + 4 + 4 (two CRCs).
inline constexpr std::size_t kRecordOverhead = 16;

/// Appends data to out as one framed TFRecord.
void append_record(std::string& out, std::string_view data);

struct RecordWriterOptions {
  /// Add to an existing file instead of replacing it.
  bool append = false;
};

class RecordWriter {
 public:
  /// Opens (creates or truncates) the file; throws IOError naming the path when it cannot.
  explicit RecordWriter(std::string path, RecordWriterOptions options = {});
  /// Flushes and closes; errors at this point are logged, not thrown.
  ~RecordWriter();
  RecordWriter(RecordWriter&&) noexcept = default;
  RecordWriter& operator=(RecordWriter&&) noexcept = default;

  /// Appends one record; throws IOError when the write fails or the writer is closed.
  void write(std::string_view data);
  /// Pushes buffered records to the operating system.
  void flush();
  /// Flushes and closes the file; later writes throw IOError. Closing twice is harmless.
  void close();

  bool is_open() const { return file_ != nullptr; }
  const std::string& path() const { return path_; }
  /// Records written through this writer.
  std::uint64_t records_written() const { return records_; }

 private:
  struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };

  std::string path_;
  std::unique_ptr<std::FILE, FileCloser> file_;
  std::uint64_t records_ = 0;
  std::string frame_;  // reused between writes
};

}  // namespace kestrel::io
