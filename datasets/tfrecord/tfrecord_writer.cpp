#include "datasets/tfrecord/tfrecord_writer.h"

#include "framework/core/error.h"
#include "framework/io/compression.h"

namespace kestrel::data {
namespace {

io::RecordWriter open_writer(std::string path, const TFRecordWriterOptions& options) {
  io::Compression compression{};
  try {
    compression = io::compression_from_name(options.compression_type);
  } catch (const ValueError& e) {
    throw ValueError("TFRecordWriter '" + path + "': " + e.what());
  }
  return io::RecordWriter(std::move(path),
                          {.compression = compression, .compression_level = options.compression_level});
}

}  // namespace

TFRecordWriter::TFRecordWriter(std::string path, TFRecordWriterOptions options)
    : writer_(open_writer(std::move(path), options)) {}

void TFRecordWriter::write(std::string_view record) { writer_.write(record); }

void TFRecordWriter::flush() { writer_.flush(); }

void TFRecordWriter::close() { writer_.close(); }

}  // namespace kestrel::data
