// Runs of bfloat16 widened to float32 and float32 rounded to bfloat16, inline, for the level's
// kernels: convert.cpp's widen_bfloat16 and round_to_bfloat16, and the row kernels (layer norm,
// softmax) that read bfloat16 rows themselves, a row at a time, where a call per row would cost
// more than the row's conversion.
//
// The bits are bfloat16's own conversions' (framework/core/dtype.h) at every level: 16 lanes at
// a time at the avx512 level (bfloat16_vectors.h), element by element elsewhere.
#pragma once

#include <cstdint>

#include "framework/core/dtype.h"
#include "framework/ops/kernels/cpu/bfloat16_vectors.h"

namespace kestrel::kernels {

/// out[0, n) = in[0, n) widened (exactly).
inline void widen_run(const bfloat16* in, std::int64_t n, float* out) {
  std::int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + bf16x16::kLanes <= n; i += bf16x16::kLanes) bf16x16::store_widened(in + i, out + i);
#endif
  for (; i < n; ++i) out[i] = static_cast<float>(in[i]);
}

/// out[0, n) = in[0, n) rounded to nearest even.
inline void round_run(const float* in, std::int64_t n, bfloat16* out) {
  std::int64_t i = 0;
#if defined(__AVX512F__)
  if (cpu_has_avx512_bf16()) i = bf16x16::store_rounded_natively(in, n, out);
  for (; i + bf16x16::kLanes <= n; i += bf16x16::kLanes) bf16x16::store_rounded(in + i, out + i);
#endif
  for (; i < n; ++i) out[i] = bfloat16(in[i]);
}

}  // namespace kestrel::kernels
