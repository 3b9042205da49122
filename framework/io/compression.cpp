#include "framework/io/compression.h"

#include <cctype>
#include <cstdint>
#include <string>

#include "framework/core/error.h"
#include "framework/io/crc32c.h"
#include "framework/io/little_endian.h"

namespace kestrel::io {
namespace {

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

int zlib_window_bits(Compression compression) {
  constexpr int kLargestWindowBits = 15;  // a 32 KiB window
  constexpr int kGzipWrapper = 16;        // zlib's flag, added to the bits, for a gzip header and trailer
  return compression == Compression::gzip ? kLargestWindowBits + kGzipWrapper : kLargestWindowBits;
}

std::string_view to_string(Compression compression) {
  switch (compression) {
    case Compression::none: return "NONE";
    case Compression::gzip: return "GZIP";
    case Compression::zlib: return "ZLIB";
  }
  return "NONE";
}

Compression compression_from_name(std::string_view name) {
  const std::string u = upper(name);
  if (u.empty() || u == "NONE") return Compression::none;
  if (u == "GZIP") return Compression::gzip;
  if (u == "ZLIB") return Compression::zlib;
  throw ValueError("compression_type '" + std::string(name) +
                   "' is not one of \"\" (none), \"NONE\", \"GZIP\", \"ZLIB\"");
}

std::optional<Compression> compression_from_name_or_auto(std::string_view name) {
  if (upper(name) == "AUTO") return std::nullopt;
  try {
    return compression_from_name(name);
  } catch (const ValueError&) {
    throw ValueError("compression_type '" + std::string(name) +
                     "' is not one of \"auto\" (detect from the file), \"\" (none), \"NONE\", \"GZIP\", \"ZLIB\"");
  }
}

Compression detect_compression(std::string_view first_bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(first_bytes.data());
  const std::size_t n = first_bytes.size();
  // A plain TFRecord file proves itself with its first length CRC; a compressed stream matches
  // it by chance with probability 2^-32.
  if (n >= 12 && masked_crc32c(p, 8) == load_le32(p + 8)) return Compression::none;
  if (n >= 2 && p[0] == 0x1f && p[1] == 0x8b) return Compression::gzip;
  if (n >= 2 && (p[0] & 0x0f) == 8 && (p[0] >> 4) <= 7 && (p[0] * 256u + p[1]) % 31 == 0) return Compression::zlib;
  return Compression::none;
}

}  // namespace kestrel::io
