// bfloat16 conversions sixteen at a time in AVX-512 registers, for the avx512 level's widening
// and rounding loops (framework/ops/kernels/cpu/convert.cpp, the fused programs'
// round_bfloat16 in elementwise.cpp). The level's compiler flags keep its own vectorizer at 256
// bits (cmake/KestrelCompileOptions.cmake), and these loops run on every bfloat16 tensor a
// program reads or writes, so they are written for 512.
//
// The integer arithmetic is bfloat16::round_to_bits' (framework/core/dtype.h), lane for lane, so
// the bits are the scalar conversion's at every level. AVX512_BF16's VCVTNEPS2BF16 is not used:
// it flushes subnormal inputs to zero, which the scalar conversion and the other levels do not.
#pragma once

#if defined(__AVX512F__)

#include <immintrin.h>

#include <cstdint>

#include "framework/core/dtype.h"

namespace kestrel::kernels::bf16x16 {

inline constexpr std::int64_t kLanes = 16;

/// Each lane's bfloat16 bits (in its low half): ties to even, a NaN kept a NaN.
inline __m512i round_to_bits(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i high = _mm512_srli_epi32(u, 16);
  const __m512i kept_bit = _mm512_and_si512(high, _mm512_set1_epi32(1));
  const __m512i rounded =
      _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), kept_bit), 16);
  const __m512i magnitude = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(magnitude, _mm512_set1_epi32(0x7f800000));
  return _mm512_mask_blend_epi32(nan, rounded, _mm512_or_si512(high, _mm512_set1_epi32(0x40)));
}

/// 16 floats rounded to bfloat16 and stored.
inline void store_rounded(const float* in, bfloat16* out) {  // __m256i may alias any type
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_cvtepi32_epi16(round_to_bits(_mm512_loadu_ps(in))));
}

/// 16 floats rounded to bfloat16 and back: the float32 value each would be stored as.
inline void store_rounded_float(const float* in, float* out) {
  _mm512_storeu_ps(out, _mm512_castsi512_ps(_mm512_slli_epi32(round_to_bits(_mm512_loadu_ps(in)), 16)));
}

/// 16 bfloat16 values widened (exactly) to float32.
inline void store_widened(const bfloat16* in, float* out) {
  const __m512i bits = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in)));
  _mm512_storeu_ps(out, _mm512_castsi512_ps(_mm512_slli_epi32(bits, 16)));
}

}  // namespace kestrel::kernels::bf16x16

#endif
