// Byte streams to and from files, optionally compressed as one GZIP or ZLIB stream (zlib deflate),
// read and written in fixed-size chunks so a file of any size never sits in memory.
//
//   io::CompressedFileWriter out("data.gz", {.compression = io::Compression::gzip});
//   out.write(bytes);
//   out.flush();                  // everything written so far can be read back
//   out.close();                  // ends the stream (the destructor does it too)
//
//   io::CompressedFileReader in("data.gz");           // compression detected from the content
//   char buf[4096];
//   while (std::size_t n = in.read(buf, sizeof buf)) use(buf, n);
//
// A GZIP file may hold several members one after the other (as appending produces); the reader
// reads them as one stream. Errors are IOError naming the file; a corrupt or truncated stream
// raises StreamError, an IOError that also carries the problem alone (detail()) for callers that
// add their own context.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "framework/core/error.h"
#include "framework/io/compression.h"

namespace kestrel::io {

/// A compressed stream is corrupt or ends too early. what() names the file; detail() is the problem.
class StreamError : public IOError {
 public:
  StreamError(const std::string& path, std::string detail)
      : IOError("file '" + path + "': " + detail), detail_(std::move(detail)) {}
  const std::string& detail() const { return detail_; }

 private:
  std::string detail_;
};

struct CompressedFileWriterOptions {
  Compression compression = Compression::none;
  /// Add to an existing file instead of replacing it (a new GZIP member; not possible for ZLIB).
  bool append = false;
  /// zlib level: -1 is zlib's default (6), 0 stores, 1 is fastest, 9 is smallest.
  int level = -1;
  /// Bytes of compressed output collected before each write to the file.
  std::size_t buffer_size = 256 * 1024;
};

class CompressedFileWriter {
 public:
  /// Opens (creates, truncates or appends to) the file; throws IOError naming it when it cannot,
  /// ValueError for a bad level or for appending to ZLIB.
  explicit CompressedFileWriter(std::string path, CompressedFileWriterOptions options = {});
  /// Ends the stream and closes; errors at this point are logged, not thrown.
  ~CompressedFileWriter();
  CompressedFileWriter(CompressedFileWriter&&) noexcept;
  CompressedFileWriter& operator=(CompressedFileWriter&&) noexcept;

  /// Compresses and writes bytes; throws IOError when the write fails or the file is closed.
  void write(std::string_view bytes);
  /// Pushes everything written so far to the operating system, readable by a reader (for GZIP and
  /// ZLIB a sync flush: the stream stays open, at the cost of a few bytes).
  void flush();
  /// Ends the stream and closes the file; later writes throw IOError. Closing twice is harmless.
  void close();

  bool is_open() const;
  const std::string& path() const { return path_; }
  Compression compression() const { return compression_; }
  /// Uncompressed bytes written so far.
  std::uint64_t bytes_written() const { return bytes_written_; }

 private:
  struct Impl;
  std::string path_;
  Compression compression_ = Compression::none;
  std::uint64_t bytes_written_ = 0;
  std::unique_ptr<Impl> impl_;
};

struct CompressedFileReaderOptions {
  /// nullopt: detect from the first bytes (see detect_compression).
  std::optional<Compression> compression;
  /// Bytes read from the file at a time (and the size of the decompressed chunks).
  std::size_t buffer_size = 256 * 1024;
};

class CompressedFileReader {
 public:
  /// Opens the file and settles its compression; throws IOError naming it when it cannot be opened.
  explicit CompressedFileReader(std::string path, CompressedFileReaderOptions options = {});
  ~CompressedFileReader();
  CompressedFileReader(CompressedFileReader&&) noexcept;
  CompressedFileReader& operator=(CompressedFileReader&&) noexcept;

  /// Reads up to size bytes of the uncompressed stream; fewer only at its end (then 0 on every
  /// later call). Throws StreamError for a corrupt or truncated stream, after which it is at the end.
  std::size_t read(void* out, std::size_t size);

  const std::string& path() const { return path_; }
  /// The compression given, or the one detected.
  Compression compression() const { return compression_; }
  /// Bytes of the uncompressed stream returned so far.
  std::uint64_t position() const { return position_; }

 private:
  struct Impl;
  bool fill();  // refills the decompressed buffer; false at the end of the stream
  [[noreturn]] void fail(std::string detail);

  std::string path_;
  Compression compression_ = Compression::none;
  std::uint64_t position_ = 0;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kestrel::io
