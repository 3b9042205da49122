#include "framework/callbacks/csv_logger.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "framework/callbacks/python_format.h"
#include "framework/core/error.h"

namespace kestrel::callbacks {
namespace {

// Python's csv module (excel dialect) quotes fields holding the separator, a quote or a newline.
std::string quote_field(const std::string& field, char separator) {
  if (field.find_first_of(std::string{separator, '"', '\r', '\n'}) == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// Python reads a first line to decide whether an appended file still needs its header.
bool file_has_content(const std::string& filename) {
  std::ifstream in(filename, std::ios::binary);
  return in && in.peek() != std::ifstream::traits_type::eof();
}

}  // namespace

CSVLogger::CSVLogger(std::string filename, CSVLoggerOptions options)
    : filename_(std::move(filename)), options_(options) {}

void CSVLogger::on_train_begin(const Logs& logs) {
  write_header_ = !(options_.append && file_has_content(filename_));
  file_.reset();
  std::FILE* f = std::fopen(filename_.c_str(), options_.append ? "ab" : "wb");
  if (f == nullptr) {
    throw IOError("CSVLogger: cannot open '" + filename_ + "' for writing: " + std::strerror(errno));
  }
  file_ = std::shared_ptr<std::FILE>(f, FileCloser{});
  keys_.clear();
  keys_known_ = false;
}

void CSVLogger::write_line(const std::vector<std::string>& fields) {
  std::string line;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) line += options_.separator;
    line += quote_field(fields[i], options_.separator);
  }
  line += "\r\n";
  if (std::fwrite(line.data(), 1, line.size(), file_.get()) != line.size() || std::fflush(file_.get()) != 0) {
    throw IOError("CSVLogger: write to '" + filename_ + "' failed: " + std::strerror(errno));
  }
}

void CSVLogger::on_epoch_end(int epoch, const Logs& logs) {
  if (!file_) {
    throw ValueError("CSVLogger: on_epoch_end before on_train_begin (the file '" + filename_ + "' is not open)");
  }
  if (!keys_known_) {
    for (const auto& [key, value] : logs) keys_.push_back(key);  // a std::map iterates sorted, as Keras sorts
    keys_known_ = true;
    if (write_header_) {
      std::vector<std::string> header{"epoch"};
      header.insert(header.end(), keys_.begin(), keys_.end());
      write_line(header);
    }
  }
  std::vector<std::string> row{std::to_string(epoch)};
  for (const std::string& key : keys_) {
    auto found = logs.find(key);
    row.push_back(found == logs.end() ? "NA" : detail::python_float_repr(found->second));
  }
  write_line(row);
}

void CSVLogger::on_train_end(const Logs& logs) { file_.reset(); }

}  // namespace kestrel::callbacks
