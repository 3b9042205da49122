#include "framework/io/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace kestrel::io {
namespace {

constexpr std::uint32_t kPolynomial = 0x82f63b78u;  // Castagnoli, bit-reversed

// Slicing-by-8: table[k][b] is the CRC of byte b followed by k zero bytes, so eight bytes
// are folded per step with eight lookups instead of eight dependent single-byte steps.
using Tables = std::array<std::array<std::uint32_t, 256>, 8>;

constexpr Tables make_tables() {
  Tables t{};
  for (std::uint32_t b = 0; b < 256; ++b) {
    std::uint32_t crc = b;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? kPolynomial : 0u);
    t[0][b] = crc;
  }
  for (std::size_t k = 1; k < 8; ++k) {
    for (std::size_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xffu];
  }
  return t;
}

constexpr Tables kTables = make_tables();

static_assert(kTables[0][1] == 0xf26b8303u, "CRC-32C table");

#if defined(__x86_64__)
// SSE 4.2's crc32 instruction computes exactly this CRC (Castagnoli, reflected), 8 bytes per
// instruction: several times the table's speed. Chosen at run time, so portable builds use it too.
__attribute__((target("sse4.2"))) std::uint32_t crc32c_sse42(std::uint32_t crc, const unsigned char* p,
                                                             std::size_t size) {
  std::uint64_t c = ~crc;
  while (size >= 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);  // x86 is little-endian: the bytes in stream order
    c = _mm_crc32_u64(c, word);
    p += 8;
    size -= 8;
  }
  auto c32 = static_cast<std::uint32_t>(c);
  while (size > 0) {
    c32 = _mm_crc32_u8(c32, *p++);
    --size;
  }
  return ~c32;
}

const bool kHasSse42 = __builtin_cpu_supports("sse4.2");
#endif

}  // namespace

std::uint32_t crc32c_extend(std::uint32_t crc, const void* data, std::size_t size) {
#if defined(__x86_64__)
  if (kHasSse42) return crc32c_sse42(crc, static_cast<const unsigned char*>(data), size);
#endif
  return detail::crc32c_extend_portable(crc, data, size);
}

std::uint32_t detail::crc32c_extend_portable(std::uint32_t crc, const void* data, std::size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint32_t c = ~crc;
  while (size >= 8) {
    // Bytes are assembled explicitly, so the result does not depend on the host's endianness.
    const std::uint32_t lo =
        c ^ (std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 | std::uint32_t{p[3]} << 24);
    c = kTables[7][lo & 0xffu] ^ kTables[6][(lo >> 8) & 0xffu] ^ kTables[5][(lo >> 16) & 0xffu] ^ kTables[4][lo >> 24] ^
        kTables[3][p[4]] ^ kTables[2][p[5]] ^ kTables[1][p[6]] ^ kTables[0][p[7]];
    p += 8;
    size -= 8;
  }
  while (size > 0) {
    c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xffu];
    --size;
  }
  return ~c;
}

}  // namespace kestrel::io
