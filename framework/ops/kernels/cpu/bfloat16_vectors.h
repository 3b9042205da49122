// bfloat16 conversions sixteen at a time in AVX-512 registers, for the avx512 level's widening
// and rounding loops (bfloat16_runs.h, which convert.cpp and the layer norm and softmax rows use),
// the fused programs' round_bfloat16 and the bfloat16 arithmetic ops' lanes (elementwise.cpp).
// The level's compiler flags keep its own vectorizer at 256
// bits (cmake/KestrelCompileOptions.cmake), and these loops run on every bfloat16 tensor a
// program reads or writes, so they are written for 512.
//
// The integer arithmetic is bfloat16::round_to_bits' (framework/core/dtype.h), lane for lane, so
// the bits are the scalar conversion's at every level. Where the CPU has AVX512_BF16
// (cpu_has_avx512_bf16), its VCVTNE2PS2BF16 rounds 32 floats in one instruction, 2.7x faster on
// Zen 5: it rounds to nearest even and quiets NaNs as round_to_bits does, but flushes subnormal
// inputs to zero, so a group of 32 holding one goes the integer way instead.
#pragma once

#if defined(__AVX512F__)

#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "framework/core/cpu_capability.h"
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

/// 16 lanes rounded to bfloat16 and stored.
inline void store_rounded(__m512 x, bfloat16* out) {  // __m256i may alias any type
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_cvtepi32_epi16(round_to_bits(x)));
}

/// 16 floats rounded to bfloat16 and stored.
inline void store_rounded(const float* in, bfloat16* out) { store_rounded(_mm512_loadu_ps(in), out); }

/// 16 floats rounded to bfloat16 and back: the float32 value each would be stored as.
inline void store_rounded_float(const float* in, float* out) {
  _mm512_storeu_ps(out, _mm512_castsi512_ps(_mm512_slli_epi32(round_to_bits(_mm512_loadu_ps(in)), 16)));
}

/// 16 bfloat16 values loaded and widened (exactly) to float32.
inline __m512 load_widened(const bfloat16* in) {
  const __m512i bits = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(bits, 16));
}

/// 16 bfloat16 values widened (exactly) to float32.
inline void store_widened(const bfloat16* in, float* out) { _mm512_storeu_ps(out, load_widened(in)); }

/// True when any of the 32 floats is subnormal (exponent 0, mantissa not).
inline bool any_subnormal(__m512 lo, __m512 hi) {
  const __m512i exponent = _mm512_set1_epi32(0x7f800000), mantissa = _mm512_set1_epi32(0x007fffff);
  auto subnormal = [&](__m512 x) {
    const __m512i u = _mm512_castps_si512(x);
    return _mm512_test_epi32_mask(u, mantissa) & ~_mm512_test_epi32_mask(u, exponent);
  };
  return (subnormal(lo) | subnormal(hi)) != 0;
}

/// 32 floats (lo, then hi) rounded by VCVTNE2PS2BF16: round_to_bits' bits where no input is
/// subnormal.
[[gnu::target("avx512bf16")]] inline __m512i round_natively(__m512 lo, __m512 hi) {
  return reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
}

/// 32 bfloat16 values in a register widened (exactly) into 32 floats at out.
inline void store_widened32(__m512i bits, float* out) {
  // Words 0-7 and 16-23 of bits in the first 256 bits, so each half unpacks into 16 lanes in order.
  const __m512i halves = _mm512_permutexvar_epi64(_mm512_set_epi64(7, 3, 6, 2, 5, 1, 4, 0), bits);
  _mm512_storeu_si512(out, _mm512_unpacklo_epi16(_mm512_setzero_si512(), halves));
  _mm512_storeu_si512(out + kLanes, _mm512_unpackhi_epi16(_mm512_setzero_si512(), halves));
}

/// Rounds the longest prefix of in[0, n) made of whole groups of 32 into out, natively where a
/// group holds no subnormal; returns its length. Out is bfloat16 (the conversion) or float (each
/// value rounded and back: the round_bfloat16 instruction). For CPUs with AVX512_BF16 only.
template <class Out>
[[gnu::target("avx512bf16")]] inline std::int64_t store_rounded_natively(const float* in, std::int64_t n, Out* out) {
  std::int64_t i = 0;
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    const __m512 lo = _mm512_loadu_ps(in + i), hi = _mm512_loadu_ps(in + i + kLanes);
    if (any_subnormal(lo, hi)) {
      for (const std::int64_t at : {i, i + kLanes}) {
        if constexpr (std::is_same_v<Out, float>) {
          store_rounded_float(in + at, out + at);
        } else {
          store_rounded(in + at, out + at);
        }
      }
    } else if constexpr (std::is_same_v<Out, float>) {
      store_widened32(round_natively(lo, hi), out + i);
    } else {
      _mm512_storeu_si512(out + i, round_natively(lo, hi));
    }
  }
  return i;
}

}  // namespace kestrel::kernels::bf16x16

#endif
