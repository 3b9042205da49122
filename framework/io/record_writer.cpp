#include "framework/io/record_writer.h"

#include "framework/core/error.h"
#include "framework/io/crc32c.h"

namespace kestrel::io {
namespace {

void put_le32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xffu));
}

void put_le64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xffu));
}

}  // namespace

void append_record(std::string& out, std::string_view data) {
  const std::size_t start = out.size();
  put_le64(out, data.size());
  put_le32(out, masked_crc32c(out.data() + start, 8));
  out.append(data);
  put_le32(out, masked_crc32c(data));
}

RecordWriter::RecordWriter(std::string path, RecordWriterOptions options)
    : file_(std::move(path),
            {.compression = options.compression, .append = options.append, .level = options.compression_level}) {}

void RecordWriter::write(std::string_view data) {
  if (!file_.is_open()) throw IOError("record file '" + file_.path() + "': write after close");
  frame_.clear();
  append_record(frame_, data);
  file_.write(frame_);
  ++records_;
}

}  // namespace kestrel::io
