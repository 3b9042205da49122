// CompressedFileWriter (framework/io/compressed_file.h): deflate into a buffer, the buffer to the file.
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <vector>

#include "framework/io/compressed_file.h"
#include "framework/logging/logging.h"

namespace kestrel::io {

struct CompressedFileWriter::Impl {
  std::FILE* file = nullptr;
  bool compressed = false;
  z_stream stream{};  // never moved: zlib keeps a pointer back to it, so Impl lives on the heap
  std::vector<unsigned char> out;
  std::size_t out_used = 0;
  std::string path;

  ~Impl() {
    if (compressed) deflateEnd(&stream);
    if (file) std::fclose(file);
  }

  void write_file(const void* data, std::size_t size) {
    if (size > 0 && std::fwrite(data, 1, size, file) != size) {
      throw IOError("file '" + path + "': write failed: " + std::strerror(errno));
    }
  }

  void drain() {
    write_file(out.data(), out_used);
    out_used = 0;
  }

  // Runs deflate over the pending input with the given flush mode until zlib has nothing more
  // to emit for it; compressed bytes go to the file whenever the buffer fills.
  void pump(int flush) {
    for (;;) {
      if (out_used == out.size()) drain();
      stream.next_out = out.data() + out_used;
      stream.avail_out = static_cast<uInt>(out.size() - out_used);
      const int rc = deflate(&stream, flush);
      out_used = out.size() - stream.avail_out;
      if (rc == Z_STREAM_ERROR) throw IOError("file '" + path + "': compression failed (zlib stream error)");
      if (flush == Z_FINISH) {
        if (rc == Z_STREAM_END) return;
        continue;
      }
      if (stream.avail_in == 0 && stream.avail_out != 0) return;
    }
  }
};

CompressedFileWriter::CompressedFileWriter(std::string path, CompressedFileWriterOptions options)
    : path_(std::move(path)), compression_(options.compression) {
  if (options.level < -1 || options.level > 9) {
    throw ValueError("file '" + path_ + "': compression level " + std::to_string(options.level) +
                     " is not in [-1, 9] (-1 is zlib's default)");
  }
  if (options.append && compression_ == Compression::zlib) {
    throw ValueError("file '" + path_ +
                     "': cannot append to a ZLIB stream (it holds one stream only); use GZIP, which "
                     "appends a new member, or no compression");
  }
  auto impl = std::make_unique<Impl>();
  impl->path = path_;
  impl->file = std::fopen(path_.c_str(), options.append ? "ab" : "wb");
  if (!impl->file) throw IOError("file '" + path_ + "': cannot open for writing: " + std::strerror(errno));
  if (compression_ != Compression::none) {
    const int window = zlib_window_bits(compression_);
    if (deflateInit2(&impl->stream, options.level, Z_DEFLATED, window, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      throw IOError("file '" + path_ + "': cannot start a " + std::string(to_string(compression_)) +
                    " stream (zlib out of memory)");
    }
    impl->compressed = true;
    impl->out.resize(std::max<std::size_t>(options.buffer_size, 4096));
  }
  impl_ = std::move(impl);
}

CompressedFileWriter::~CompressedFileWriter() {
  if (!is_open()) return;
  // A destructor must not throw; a failure to end the stream is reported instead.
  try {
    close();
  } catch (const std::exception& e) {
    logging::get("kestrel.io")->error("{} (while closing in a destructor)", e.what());
  }
}

CompressedFileWriter::CompressedFileWriter(CompressedFileWriter&&) noexcept = default;

CompressedFileWriter& CompressedFileWriter::operator=(CompressedFileWriter&& other) noexcept {
  if (this == &other) return *this;
  if (is_open()) {
    try {
      close();
    } catch (const std::exception& e) {
      logging::get("kestrel.io")->error("{} (while closing before a move)", e.what());
    }
  }
  path_ = std::move(other.path_);
  compression_ = other.compression_;
  bytes_written_ = other.bytes_written_;
  impl_ = std::move(other.impl_);
  return *this;
}

bool CompressedFileWriter::is_open() const { return impl_ && impl_->file; }

void CompressedFileWriter::write(std::string_view bytes) {
  if (!is_open()) throw IOError("file '" + path_ + "': write after close");
  Impl& s = *impl_;
  if (!s.compressed) {
    s.write_file(bytes.data(), bytes.size());
  } else {
    // avail_in is 32-bit: feed very large writes in pieces.
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
    std::size_t left = bytes.size();
    while (left > 0) {
      const std::size_t piece = std::min<std::size_t>(left, UINT_MAX);
      s.stream.next_in = const_cast<unsigned char*>(p);
      s.stream.avail_in = static_cast<uInt>(piece);
      s.pump(Z_NO_FLUSH);
      p += piece;
      left -= piece;
    }
  }
  bytes_written_ += bytes.size();
}

void CompressedFileWriter::flush() {
  if (!is_open()) return;
  Impl& s = *impl_;
  if (s.compressed) {
    s.stream.avail_in = 0;
    s.pump(Z_SYNC_FLUSH);
    s.drain();
  }
  if (std::fflush(s.file) != 0) throw IOError("file '" + path_ + "': flush failed: " + std::strerror(errno));
}

void CompressedFileWriter::close() {
  if (!is_open()) return;
  Impl& s = *impl_;
  std::string error;
  try {
    if (s.compressed) {
      s.stream.avail_in = 0;
      s.pump(Z_FINISH);
      s.drain();
    }
  } catch (const IOError& e) {
    error = e.what();
  }
  std::FILE* f = s.file;
  s.file = nullptr;
  if (std::fclose(f) != 0 && error.empty()) error = "file '" + path_ + "': close failed: " + std::strerror(errno);
  if (!error.empty()) throw IOError(error);
}

}  // namespace kestrel::io
