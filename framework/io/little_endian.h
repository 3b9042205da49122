// Little-endian integers in bytes, as TFRecord's framing stores its lengths and CRCs
// (record_reader.cpp reads records, compression.cpp recognizes an uncompressed one).
//
//   const std::uint64_t length = io::load_le64(header);
//   const std::uint32_t crc = io::load_le32(header + 8);
#pragma once

#include <cstdint>

namespace kestrel::io {

/// The uint32 whose least significant byte is p[0], whatever the machine's byte order.
inline std::uint32_t load_le32(const unsigned char* p) {
  return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 | std::uint32_t{p[3]} << 24;
}

/// The uint64 whose least significant byte is p[0].
inline std::uint64_t load_le64(const unsigned char* p) {
  return std::uint64_t{load_le32(p)} | std::uint64_t{load_le32(p + 4)} << 32;
}

}  // namespace kestrel::io
