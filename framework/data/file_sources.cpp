// Sources over files: Dataset::from_files, which FILE auto-sharding splits by file, and
// TextLineDataset on top of it.
#include <filesystem>
#include <fstream>

#include "framework/core/error.h"
#include "framework/data/dataset_node.h"

namespace kestrel::data {
namespace {

class FileSourceNode final : public detail::DatasetNode {
 public:
  using Read = std::function<Generator(const std::vector<std::string>& files)>;

  FileSourceNode(std::vector<std::string> files, Read read, ElementSpec spec, std::string name)
      : files_(std::move(files)), read_(std::move(read)), spec_(std::move(spec)), name_(std::move(name)) {
    if (files_.empty()) throw ValueError(name_ + ": no files given; pass at least one path");
    if (!read_) throw ValueError(name_ + ": the file reader is empty");
  }
  std::string name() const override { return name_; }
  std::int64_t cardinality() const override { return kUnknownCardinality; }
  ElementSpec element_spec() const override { return spec_; }
  std::vector<std::string> files() const override { return files_; }
  std::shared_ptr<const DatasetNode> with_files(std::vector<std::string> files) const override {
    return std::make_shared<FileSourceNode>(std::move(files), read_, spec_, name_);
  }
  std::unique_ptr<Iterator> make_iterator() const override {
    return std::make_unique<detail::GeneratorIterator>(read_(files_));
  }

 private:
  std::vector<std::string> files_;
  Read read_;
  ElementSpec spec_;
  std::string name_;
};

// One pass over text files, line by line. A file that cannot be read raises IOError once and
// is passed over by the next call, so ignore_errors() goes on with the next file.
class LineReader {
 public:
  explicit LineReader(std::vector<std::string> files) : files_(std::move(files)) {}

  std::optional<Element> operator()() {
    std::string line;
    while (true) {
      if (!stream_->is_open()) {
        if (next_file_ >= files_.size()) return std::nullopt;
        const std::string& path = files_[next_file_++];  // moves on first, so ignore_errors() can go on
        std::error_code error;
        if (!std::filesystem::is_regular_file(path, error)) {
          throw IOError("TextLineDataset: '" + path + "' is " +
                        (std::filesystem::exists(path, error) ? "not a regular file" : "missing"));
        }
        stream_->open(path);
        if (!stream_->is_open()) throw IOError("TextLineDataset: cannot open '" + path + "'");
        current_ = path;
      }
      if (std::getline(*stream_, line)) break;
      const bool failed = stream_->bad();
      stream_->close();
      if (failed) throw IOError("TextLineDataset: reading '" + current_ + "' failed before its end");
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();  // files written on Windows
    return Element{{"text", Strings(std::move(line))}};
  }

 private:
  std::vector<std::string> files_;
  std::size_t next_file_ = 0;
  std::string current_;
  std::shared_ptr<std::ifstream> stream_ = std::make_shared<std::ifstream>();  // shared: a Generator is copyable
};

}  // namespace

Dataset Dataset::from_files(std::vector<std::string> files,
                            std::function<Generator(const std::vector<std::string>& files)> read, ElementSpec spec,
                            std::string name) {
  return Dataset(std::make_shared<FileSourceNode>(std::move(files), std::move(read), std::move(spec), std::move(name)));
}

Dataset TextLineDataset(std::vector<std::string> filenames) {
  return Dataset::from_files(
      std::move(filenames), [](const std::vector<std::string>& files) { return Generator(LineReader(files)); },
      {{"text", ValueSpec{{}, DType::float32, true}}}, "TextLineDataset");
}

}  // namespace kestrel::data
