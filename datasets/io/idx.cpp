#include "datasets/io/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "framework/core/error.h"

namespace kestrel::datasets {
namespace {

// gzread reads plain files too, so one reader serves both.
class GzReader {
 public:
  explicit GzReader(const std::string& path) : path_(path), file_(gzopen(path.c_str(), "rb")) {
    if (file_ == nullptr) throw IOError("cannot open IDX file '" + path + "'");
  }
  ~GzReader() { gzclose(file_); }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  // Reads `bytes` bytes of `what`, a part of `total` bytes (the whole of `what` when 0), for the error.
  void read(void* out, std::size_t bytes, const char* what, std::size_t total = 0) {
    auto* dst = static_cast<unsigned char*>(out);
    std::size_t done = 0;
    while (done < bytes) {
      // gzread takes an unsigned int count: read in chunks.
      unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(bytes - done, 1u << 30));
      int got = gzread(file_, dst + done, chunk);
      if (got <= 0) {
        throw IOError("IDX file '" + path_ + "' ends at byte " + std::to_string(offset_ + done) + " while reading " +
                      what + " (" + std::to_string(total == 0 ? bytes : total) +
                      " bytes expected): the file is truncated or corrupt");
      }
      done += static_cast<std::size_t>(got);
    }
    offset_ += bytes;
  }
  std::size_t offset() const { return offset_; }

 private:
  std::string path_;
  gzFile file_;
  std::size_t offset_ = 0;
};

std::uint32_t big_endian_u32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}

std::size_t element_size(unsigned char type_code) {
  switch (type_code) {
    case 0x08:
    case 0x09: return 1;
    case 0x0B: return 2;
    case 0x0C:
    case 0x0D: return 4;
    case 0x0E: return 8;
    default: return 0;
  }
}

// Element i of big-endian IDX data as double.
double element(const unsigned char* data, std::size_t i, unsigned char type_code) {
  const unsigned char* p = data + i * element_size(type_code);
  switch (type_code) {
    case 0x08: return p[0];
    case 0x09: return static_cast<std::int8_t>(p[0]);
    case 0x0B: return static_cast<std::int16_t>((p[0] << 8) | p[1]);
    case 0x0C: return static_cast<std::int32_t>(big_endian_u32(p));
    case 0x0D: {
      std::uint32_t bits = big_endian_u32(p);
      float f;
      std::memcpy(&f, &bits, sizeof f);
      return f;
    }
    default: {
      std::uint64_t bits = (std::uint64_t{big_endian_u32(p)} << 32) | big_endian_u32(p + 4);
      double d;
      std::memcpy(&d, &bits, sizeof d);
      return d;
    }
  }
}

bool is_float_code(unsigned char type_code) { return type_code == 0x0D || type_code == 0x0E; }

// A float element converted to an integer type T. Out of T's range (or NaN) the conversion would
// be undefined behaviour, so it is an error naming the element instead.
template <class T>
T checked_integer(double v, std::size_t i, const std::string& path) {
  // T's minimum is -2^k, exact as a double; the values that truncate into T lie in [-2^k, 2^k).
  constexpr double kLow = static_cast<double>(std::numeric_limits<T>::min());
  if (!(v >= kLow && v < -kLow)) {
    throw ValueError("IDX file '" + path + "': element " + std::to_string(i) + " is " + std::to_string(v) + ", which " +
                     std::string(to_string(dtype_of<T>())) + " cannot hold; read the file as float32");
  }
  return static_cast<T>(v);
}

template <class T>
void convert(const std::vector<unsigned char>& raw, unsigned char type_code, const std::string& path, Tensor& out) {
  T* dst = static_cast<T*>(out.view().data);
  const std::size_t n = static_cast<std::size_t>(out.numel());
  if (type_code == 0x08) {
    for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<T>(raw[i]);  // the common case, kept fast
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const double v = element(raw.data(), i, type_code);
    if constexpr (std::is_same_v<T, bfloat16>) {
      dst[i] = bfloat16(static_cast<float>(v));
    } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      dst[i] = is_float_code(type_code) ? checked_integer<T>(v, i, path) : static_cast<T>(v);
    } else {
      dst[i] = static_cast<T>(v);
    }
  }
}

// The number of data bytes the dims claim, or an error when that is more than any file holds
// (the product would overflow, or the shape exceed Kestrel's 2^63 elements).
std::size_t claimed_bytes(const std::vector<std::int64_t>& dims, std::size_t element_bytes, const std::string& path) {
  std::uint64_t bytes = element_bytes;
  std::string shown;
  bool overflow = false;
  for (std::int64_t d : dims) {
    shown += (shown.empty() ? "" : " x ") + std::to_string(d);
    overflow = overflow || __builtin_mul_overflow(bytes, static_cast<std::uint64_t>(d), &bytes);
  }
  if (overflow || bytes > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    throw IOError("IDX file '" + path + "' declares dims " + shown +
                  " at byte 4, more data than any file holds: the header is corrupt");
  }
  return static_cast<std::size_t>(bytes);
}

}  // namespace

Tensor read_idx(const std::string& path, DType dtype) {
  GzReader in(path);
  unsigned char magic[4];
  in.read(magic, 4, "the magic number");
  const std::size_t size = element_size(magic[2]);
  if (magic[0] != 0 || magic[1] != 0 || size == 0) {
    throw IOError("'" + path +
                  "' is not an IDX file: the header at byte 0 is not 00 00 <type> <rank> with a known type");
  }
  const int rank = magic[3];
  if (rank == 0 || rank > Shape::kMaxRank) {
    throw IOError("IDX file '" + path + "' declares rank " + std::to_string(rank) + " at byte 3; expected 1 to " +
                  std::to_string(Shape::kMaxRank));
  }
  std::vector<std::int64_t> dims(static_cast<std::size_t>(rank));
  for (auto& d : dims) {
    unsigned char b[4];
    in.read(b, 4, "a dimension");
    d = big_endian_u32(b);
  }
  const std::size_t bytes = claimed_bytes(dims, size, path);
  // The header is not trusted with the allocation: the data is read in pieces, so a short file
  // claiming gigabytes fails after reading what it holds. (A gzip file's length says nothing
  // about its content's, so the data itself is what is counted.)
  constexpr std::size_t kPiece = std::size_t{1} << 20;
  std::vector<unsigned char> raw;
  while (raw.size() < bytes) {
    const std::size_t start = raw.size();
    raw.resize(start + std::min(kPiece, bytes - start));
    in.read(raw.data() + start, raw.size() - start, "the data", bytes);
  }
  Tensor out = Tensor::empty(Shape(dims), dtype);
  visit_dtype(dtype, [&](auto tag) { convert<decltype(tag)>(raw, magic[2], path, out); });
  return out;
}

void write_idx_ubyte(const std::string& path, const Tensor& values) {
  const bool gzip = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  gzFile file = gzopen(path.c_str(), gzip ? "wb" : "wbT");  // T: write without compression
  if (file == nullptr) throw IOError("cannot create IDX file '" + path + "'");
  std::unique_ptr<gzFile_s, int (*)(gzFile)> closer(file, gzclose);
  std::vector<unsigned char> bytes = {0, 0, 0x08, static_cast<unsigned char>(values.rank())};
  for (std::int64_t d : values.shape().dims()) {
    auto u = static_cast<std::uint32_t>(d);
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<unsigned char>(u >> shift));
  }
  for (double v : values.to_vector<double>()) {
    if (!(v >= 0.0 && v <= 255.0)) {
      throw ValueError("write_idx_ubyte('" + path + "'): value " + std::to_string(v) + " is outside [0, 255]");
    }
    bytes.push_back(static_cast<unsigned char>(v));
  }
  if (gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())) != static_cast<int>(bytes.size())) {
    throw IOError("cannot write IDX file '" + path + "'");
  }
}

}  // namespace kestrel::datasets
