// Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"), the counter-based
// generator behind random::Key: four 32-bit words from a 128-bit counter and a 64-bit key, each
// output a pure function of the two. Header-only, so that the CPU kernels compiled once per
// instruction-set level (framework/ops/kernels/cpu/) draw exactly the words random::Key::bits draws.
//
//   std::array<std::uint32_t, 4> words = philox::block({lo, hi, 0, 0}, {key0, key1});
#pragma once

#include <array>
#include <cstdint>

namespace kestrel::philox {

inline constexpr std::uint32_t kMul0 = 0xD2511F53u;
inline constexpr std::uint32_t kMul1 = 0xCD9E8D57u;
inline constexpr std::uint32_t kWeyl0 = 0x9E3779B9u;
inline constexpr std::uint32_t kWeyl1 = 0xBB67AE85u;
inline constexpr int kRounds = 10;

/// The four words for one counter.
inline std::array<std::uint32_t, 4> block(std::array<std::uint32_t, 4> c, std::array<std::uint32_t, 2> k) {
  for (int round = 0; round < kRounds; ++round) {
    const std::uint64_t p0 = static_cast<std::uint64_t>(kMul0) * c[0];
    const std::uint64_t p1 = static_cast<std::uint64_t>(kMul1) * c[2];
    c = {static_cast<std::uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<std::uint32_t>(p1),
         static_cast<std::uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<std::uint32_t>(p0)};
    k[0] += kWeyl0;
    k[1] += kWeyl1;
  }
  return c;
}

}  // namespace kestrel::philox
