#include "framework/io/record_writer.h"

#include <cerrno>
#include <cstring>

#include "framework/core/error.h"
#include "framework/io/crc32c.h"
#include "framework/logging/logging.h"

namespace kestrel::io {
namespace {

void put_le32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xffu));
}

void put_le64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xffu));
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

void append_record(std::string& out, std::string_view data) {
  const std::size_t start = out.size();
  put_le64(out, data.size());
  put_le32(out, masked_crc32c(out.data() + start, 8));
  out.append(data);
  put_le32(out, masked_crc32c(data));
}

RecordWriter::RecordWriter(std::string path, RecordWriterOptions options) : path_(std::move(path)) {
  file_.reset(std::fopen(path_.c_str(), options.append ? "ab" : "wb"));
  if (!file_) throw IOError("record file '" + path_ + "': cannot open for writing: " + errno_text());
}

RecordWriter::~RecordWriter() {
  if (!file_) return;
  // A destructor must not throw; a failed final flush is reported instead.
  if (std::fflush(file_.get()) != 0) {
    logging::get("kestrel.io")->error("record file '{}': flush on close failed: {}", path_, errno_text());
  }
}

void RecordWriter::write(std::string_view data) {
  if (!file_) throw IOError("record file '" + path_ + "': write after close");
  frame_.clear();
  append_record(frame_, data);
  if (std::fwrite(frame_.data(), 1, frame_.size(), file_.get()) != frame_.size()) {
    throw IOError("record file '" + path_ + "': write failed: " + errno_text());
  }
  ++records_;
}

void RecordWriter::flush() {
  if (!file_) return;
  if (std::fflush(file_.get()) != 0) throw IOError("record file '" + path_ + "': flush failed: " + errno_text());
}

void RecordWriter::close() {
  if (!file_) return;
  std::FILE* f = file_.release();
  if (std::fclose(f) != 0) throw IOError("record file '" + path_ + "': close failed: " + errno_text());
}

}  // namespace kestrel::io
