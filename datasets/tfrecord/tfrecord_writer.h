// TFRecordWriter: writes records to a TFRecord file, as tf.io.TFRecordWriter.
//
//   data::TFRecordWriter writer("train.tfrecord.gz", {.compression_type = "GZIP"});
//   for (const data::Element& e : examples) writer.write(data::serialize_example(e));
//   writer.close();                        // the destructor closes too, logging a failure
//
// compression_type is "" (none), "GZIP" or "ZLIB", as TensorFlow names them; GZIP and ZLIB
// compress the whole file. TFRecordDataset reads the files back (and TensorFlow can too).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "framework/io/record_writer.h"

namespace kestrel::data {

struct TFRecordWriterOptions {
  /// "" or "NONE", "GZIP", "ZLIB" (any letter case).
  std::string compression_type;
  /// zlib level for GZIP and ZLIB: -1 is zlib's default (6), 1 fastest, 9 smallest.
  int compression_level = -1;
};

class TFRecordWriter {
 public:
  /// Creates (or replaces) the file; throws IOError naming it when that fails, ValueError for an
  /// unknown compression_type.
  explicit TFRecordWriter(std::string path, TFRecordWriterOptions options = {});

  /// Appends one record; throws IOError naming the file when the write fails or after close().
  void write(std::string_view record);
  /// Pushes the records written so far to the file, readable by a reader.
  void flush();
  /// Ends the stream and closes the file; throws IOError naming it on failure. Closing twice is harmless.
  void close();

  const std::string& path() const { return writer_.path(); }
  /// Records written so far.
  std::uint64_t records_written() const { return writer_.records_written(); }

 private:
  io::RecordWriter writer_;
};

}  // namespace kestrel::data
