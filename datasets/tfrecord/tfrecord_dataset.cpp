#include "datasets/tfrecord/tfrecord_dataset.h"

#include <memory>
#include <optional>

#include "framework/core/error.h"
#include "framework/io/compression.h"
#include "framework/io/record_reader.h"

namespace kestrel::data {
namespace {

// The state of one pass: which file comes next and the reader of the current one. A failure
// leaves the state where reading can go on (the reader past the bad record, or the next file).
class RecordGenerator {
 public:
  RecordGenerator(std::vector<std::string> files, io::RecordReaderOptions options)
      : files_(std::move(files)), options_(options) {}

  std::optional<Element> operator()() {
    while (true) {
      if (!reader_) {
        if (next_file_ >= files_.size()) return std::nullopt;
        // Advance first: a file that cannot be opened is skipped by the next call.
        const std::string& path = files_[next_file_++];
        reader_ = std::make_shared<io::RecordReader>(path, options_);
      }
      std::string record;
      if (reader_->read(record)) return Element{{"record", Strings(std::move(record))}};
      reader_.reset();
    }
  }

 private:
  std::vector<std::string> files_;
  io::RecordReaderOptions options_;
  std::size_t next_file_ = 0;
  std::shared_ptr<io::RecordReader> reader_;  // shared: a Generator (std::function) must be copyable
};

}  // namespace

Dataset TFRecordDataset(std::vector<std::string> filenames, TFRecordOptions options) {
  if (filenames.empty()) throw ValueError("TFRecordDataset: no files given; pass at least one path");
  std::optional<io::Compression> compression;
  try {
    compression = io::compression_from_name_or_auto(options.compression_type);
  } catch (const ValueError& e) {
    throw ValueError(std::string("TFRecordDataset: ") + e.what());
  }
  const io::RecordReaderOptions reader_options{.compression = compression, .buffer_size = options.buffer_size};
  ElementSpec spec{{"record", ValueSpec{.shape = {}, .dtype = DType::float32, .is_string = true}}};
  // A file source, so FILE auto-sharding can give each worker its own files.
  return Dataset::from_files(
      std::move(filenames),
      [reader_options](const std::vector<std::string>& files) {
        return Generator(RecordGenerator(files, reader_options));
      },
      std::move(spec), "TFRecordDataset");
}

}  // namespace kestrel::data
