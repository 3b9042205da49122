// CRC-32C (Castagnoli), the checksum of TFRecord files, and its TFRecord masking.
//
//   std::uint32_t crc = io::crc32c("123456789");             // 0xE3069283
//   std::uint32_t more = io::crc32c_extend(crc, tail.data(), tail.size());
//   std::uint32_t stored = io::masked_crc32c(payload);        // what a TFRecord file holds
//
// Masking rotates and offsets the CRC so that a CRC of data that itself holds CRCs does not
// degenerate; TFRecord stores only masked CRCs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kestrel::io {

/// The constant TFRecord adds to a rotated CRC.
inline constexpr std::uint32_t kCrc32cMaskDelta = 0xa282ead8u;

/// Continues a CRC-32C over more bytes: crc32c(a + b) == crc32c_extend(crc32c(a), b).
/// Uses the CPU's crc32 instruction when it has one (x86 SSE 4.2), else tables.
std::uint32_t crc32c_extend(std::uint32_t crc, const void* data, std::size_t size);

namespace detail {
/// The table-driven CRC-32C that crc32c_extend falls back to (public so tests can compare the two).
std::uint32_t crc32c_extend_portable(std::uint32_t crc, const void* data, std::size_t size);
}  // namespace detail

/// The CRC-32C of a byte range.
inline std::uint32_t crc32c(const void* data, std::size_t size) { return crc32c_extend(0, data, size); }
inline std::uint32_t crc32c(std::string_view data) { return crc32c_extend(0, data.data(), data.size()); }

/// ((crc >> 15) | (crc << 17)) + kCrc32cMaskDelta, as TFRecord stores CRCs.
constexpr std::uint32_t mask_crc32c(std::uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kCrc32cMaskDelta; }
/// The inverse of mask_crc32c.
constexpr std::uint32_t unmask_crc32c(std::uint32_t masked) {
  const std::uint32_t rotated = masked - kCrc32cMaskDelta;
  return (rotated >> 17) | (rotated << 15);
}

/// The masked CRC-32C of a byte range.
inline std::uint32_t masked_crc32c(const void* data, std::size_t size) { return mask_crc32c(crc32c(data, size)); }
inline std::uint32_t masked_crc32c(std::string_view data) { return mask_crc32c(crc32c(data)); }

}  // namespace kestrel::io
