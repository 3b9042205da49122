// CompressedFileReader (framework/io/compressed_file.h): file chunks in, inflated chunks out.
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "framework/io/compressed_file.h"

namespace kestrel::io {

struct CompressedFileReader::Impl {
  std::FILE* file = nullptr;
  bool compressed = false;
  z_stream stream{};               // heap-pinned: zlib keeps a pointer back to it
  std::vector<unsigned char> in;   // raw file bytes (compressed streams only)
  std::vector<unsigned char> out;  // uncompressed bytes not yet returned: [out_pos, out_end)
  std::size_t out_pos = 0;
  std::size_t out_end = 0;
  bool member_ended = false;  // the current GZIP member / ZLIB stream reached its end marker
  bool finished = false;      // end of stream, or an error was raised

  ~Impl() {
    if (compressed) inflateEnd(&stream);
    if (file) std::fclose(file);
  }

  // Reads up to size raw bytes; 0 only at the end of the file.
  std::size_t read_file(unsigned char* dst, std::size_t size, const std::string& path) {
    const std::size_t n = std::fread(dst, 1, size, file);
    if (n < size && std::ferror(file)) throw IOError("file '" + path + "': read failed: " + std::strerror(errno));
    return n;
  }
};

CompressedFileReader::CompressedFileReader(std::string path, CompressedFileReaderOptions options)
    : path_(std::move(path)) {
  auto impl = std::make_unique<Impl>();
  impl->file = std::fopen(path_.c_str(), "rb");
  if (!impl->file) throw IOError("file '" + path_ + "': cannot open for reading: " + std::strerror(errno));
  const std::size_t buffer = std::max<std::size_t>(options.buffer_size, 4096);
  impl->out.resize(buffer);
  // The first chunk settles the compression; for an uncompressed file it is already the output.
  std::vector<unsigned char> first(buffer);
  const std::size_t n = impl->read_file(first.data(), first.size(), path_);
  compression_ = options.compression.value_or(
      detect_compression(std::string_view(reinterpret_cast<const char*>(first.data()), n)));
  if (compression_ == Compression::none) {
    impl->out.swap(first);
    impl->out_end = n;
    impl->finished = n == 0;
  } else {
    const int window = zlib_window_bits(compression_);
    if (inflateInit2(&impl->stream, window) != Z_OK) {
      throw IOError("file '" + path_ + "': cannot start reading a " + std::string(to_string(compression_)) +
                    " stream (zlib out of memory)");
    }
    impl->compressed = true;
    impl->in.swap(first);
    impl->stream.next_in = impl->in.data();
    impl->stream.avail_in = static_cast<uInt>(n);
  }
  impl_ = std::move(impl);
}

CompressedFileReader::~CompressedFileReader() = default;
CompressedFileReader::CompressedFileReader(CompressedFileReader&&) noexcept = default;
CompressedFileReader& CompressedFileReader::operator=(CompressedFileReader&&) noexcept = default;

void CompressedFileReader::fail(std::string detail) {
  impl_->finished = true;
  impl_->out_pos = impl_->out_end = 0;
  throw StreamError(path_, std::move(detail));
}

bool CompressedFileReader::fill() {
  Impl& s = *impl_;
  s.out_pos = s.out_end = 0;
  if (s.finished) return false;
  if (!s.compressed) {
    s.out_end = s.read_file(s.out.data(), s.out.size(), path_);
    s.finished = s.out_end == 0;
    return !s.finished;
  }
  const std::string name(to_string(compression_));
  while (s.out_end == 0) {
    if (s.stream.avail_in == 0) {
      const std::size_t n = s.read_file(s.in.data(), s.in.size(), path_);
      if (n == 0) {
        if (s.member_ended) {
          s.finished = true;
          return false;
        }
        fail("the " + name + " stream ends before its end marker (the file is truncated)");
      }
      s.stream.next_in = s.in.data();
      s.stream.avail_in = static_cast<uInt>(n);
    }
    if (s.member_ended) {
      // More bytes after an end marker: the next GZIP member (appending makes these).
      if (inflateReset(&s.stream) != Z_OK) fail("cannot restart the " + name + " stream");
      s.member_ended = false;
    }
    s.stream.next_out = s.out.data();
    s.stream.avail_out = static_cast<uInt>(s.out.size());
    const int rc = inflate(&s.stream, Z_NO_FLUSH);
    s.out_end = s.out.size() - s.stream.avail_out;
    if (rc == Z_STREAM_END) {
      s.member_ended = true;
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      // Z_BUF_ERROR only means "no progress without more input", which the loop provides.
      const char* why = s.stream.msg ? s.stream.msg : (rc == Z_NEED_DICT ? "needs a preset dictionary" : "zlib error");
      fail("the " + name + " stream is corrupt (" + why + ")");
    }
  }
  return true;
}

std::size_t CompressedFileReader::read(void* out, std::size_t size) {
  if (!impl_) return 0;
  Impl& s = *impl_;
  auto* dst = static_cast<unsigned char*>(out);
  std::size_t done = 0;
  while (done < size) {
    if (s.out_pos == s.out_end && !fill()) break;
    const std::size_t n = std::min(size - done, s.out_end - s.out_pos);
    std::memcpy(dst + done, s.out.data() + s.out_pos, n);
    s.out_pos += n;
    done += n;
  }
  position_ += done;
  return done;
}

}  // namespace kestrel::io
