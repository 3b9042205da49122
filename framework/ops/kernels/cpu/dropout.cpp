// dropout's mask and scaling, for every CPU level. Element i is kept when random::uniform_at(key,
// i) >= rate: uniform_at is the top 24 bits of word i % 4 of Philox counter i / 4, times 2^-24, so
// the test is those bits against an integer threshold. With AVX2, eight counters go through
// Philox's rounds side by side in vector registers; below it, one at a time (philox::block).
#include "framework/ops/kernels/cpu/level.h"

#include <algorithm>

#include "framework/core/philox.h"
#include "framework/core/thread_pool.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace kestrel::kernels::KESTREL_CPU_LEVEL {
namespace {

constexpr std::int64_t kCounters = 8;             // per batch: 32 elements
constexpr std::int64_t kGrainElements = 1 << 13;  // Philox costs more per element than a copy

using Words = std::array<std::uint32_t, 4 * kCounters>;

#if defined(__AVX2__)
// The high 32 bits of each lane's a * m (m the same in every lane): the even lanes' 64-bit
// products shifted down, blended with the odd lanes', whose high halves are already in place.
__m256i multiply_high(__m256i a, __m256i m) {
  const __m256i even = _mm256_srli_epi64(_mm256_mul_epu32(a, m), 32);
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
  return _mm256_blend_epi32(even, odd, 0xAA);
}

// The words of counters first, first + 1, ..., in the order elements take them (counter j's word
// w is element 4j + w's), as philox::block computes each.
void draw(std::uint64_t first, std::array<std::uint32_t, 2> key, Words& words) {
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(philox::kMul0));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(philox::kMul1));
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  // Each lane's counter is first + lane in 64 bits: its high word takes the carry where the low
  // word wraps (an unsigned low < lane).
  const __m256i low = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(first))), lanes);
  const __m256i carried = _mm256_cmpgt_epi32(_mm256_xor_si256(lanes, _mm256_set1_epi32(INT32_MIN)),
                                             _mm256_xor_si256(low, _mm256_set1_epi32(INT32_MIN)));
  __m256i c0 = low;
  __m256i c1 = _mm256_sub_epi32(_mm256_set1_epi32(static_cast<int>(first >> 32)), carried);
  __m256i c2 = _mm256_setzero_si256();
  __m256i c3 = _mm256_setzero_si256();
  __m256i k0 = _mm256_set1_epi32(static_cast<int>(key[0]));
  __m256i k1 = _mm256_set1_epi32(static_cast<int>(key[1]));
  const __m256i weyl0 = _mm256_set1_epi32(static_cast<int>(philox::kWeyl0));
  const __m256i weyl1 = _mm256_set1_epi32(static_cast<int>(philox::kWeyl1));
  for (int round = 0; round < philox::kRounds; ++round) {
    const __m256i high0 = multiply_high(c0, m0);
    const __m256i high1 = multiply_high(c2, m1);
    const __m256i low0 = _mm256_mullo_epi32(c0, m0);
    const __m256i low1 = _mm256_mullo_epi32(c2, m1);
    c0 = _mm256_xor_si256(_mm256_xor_si256(high1, c1), k0);
    c1 = low1;
    c2 = _mm256_xor_si256(_mm256_xor_si256(high0, c3), k1);
    c3 = low0;
    k0 = _mm256_add_epi32(k0, weyl0);
    k1 = _mm256_add_epi32(k1, weyl1);
  }
  // Transpose the four words of eight counters into counter order: 4 x 8 -> 8 x 4.
  const __m256i t0 = _mm256_unpacklo_epi32(c0, c1);  // c0[0] c1[0] c0[1] c1[1] | c0[4] c1[4] ...
  const __m256i t1 = _mm256_unpackhi_epi32(c0, c1);
  const __m256i t2 = _mm256_unpacklo_epi32(c2, c3);
  const __m256i t3 = _mm256_unpackhi_epi32(c2, c3);
  const __m256i u0 = _mm256_unpacklo_epi64(t0, t2);  // counter 0 | counter 4
  const __m256i u1 = _mm256_unpackhi_epi64(t0, t2);  // counter 1 | counter 5
  const __m256i u2 = _mm256_unpacklo_epi64(t1, t3);  // counter 2 | counter 6
  const __m256i u3 = _mm256_unpackhi_epi64(t1, t3);  // counter 3 | counter 7
  auto* out = reinterpret_cast<__m256i*>(words.data());
  _mm256_storeu_si256(out + 0, _mm256_permute2x128_si256(u0, u1, 0x20));  // counters 0, 1
  _mm256_storeu_si256(out + 1, _mm256_permute2x128_si256(u2, u3, 0x20));  // counters 2, 3
  _mm256_storeu_si256(out + 2, _mm256_permute2x128_si256(u0, u1, 0x31));  // counters 4, 5
  _mm256_storeu_si256(out + 3, _mm256_permute2x128_si256(u2, u3, 0x31));  // counters 6, 7
}
#else
void draw(std::uint64_t first, std::array<std::uint32_t, 2> key, Words& words) {
  for (std::int64_t j = 0; j < kCounters; ++j) {
    const std::uint64_t counter = first + static_cast<std::uint64_t>(j);
    const std::array<std::uint32_t, 4> block =
        philox::block({static_cast<std::uint32_t>(counter), static_cast<std::uint32_t>(counter >> 32), 0, 0}, key);
    std::copy(block.begin(), block.end(), words.begin() + 4 * j);
  }
}
#endif

void dropout_range(const float* x, float* y, std::int64_t begin, std::int64_t end, std::array<std::uint32_t, 2> key,
                   std::uint32_t threshold, float scale) {
  Words words;
  for (std::int64_t first = begin / 4; first * 4 < end; first += kCounters) {
    draw(static_cast<std::uint64_t>(first), key, words);
    const std::int64_t base = first * 4;
    const std::int64_t lo = std::max(begin, base);
    const std::int64_t hi = std::min(end, base + 4 * kCounters);
    for (std::int64_t e = lo; e < hi; ++e) {
      y[e] = (words[static_cast<std::size_t>(e - base)] >> 8) >= threshold ? x[e] * scale : 0.0f;
    }
  }
}

}  // namespace

void dropout(const float* x, float* y, std::int64_t n, std::uint64_t key, std::uint32_t threshold, float scale) {
  const std::array<std::uint32_t, 2> words{static_cast<std::uint32_t>(key), static_cast<std::uint32_t>(key >> 32)};
  parallel_for(n, kGrainElements,
               [&](std::int64_t begin, std::int64_t end) { dropout_range(x, y, begin, end, words, threshold, scale); });
}

}  // namespace kestrel::kernels::KESTREL_CPU_LEVEL
