// Element type conversion for every CPU level: ops::cast's kernel, and how float32-only kernels
// see bfloat16 data (widened before, rounded after; framework/ops/dispatch.cpp, the jit's executor),
// whole tensors at a time or, for the kernels that compute bfloat16 in float32 (gemm and
// convolution below AVX-512, elementwise ops, cross-entropy rows, fused programs), a block at a
// time. The runs themselves are bfloat16_runs.h's, which the level's row kernels inline.
#include "framework/ops/kernels/cpu/level.h"

#include <type_traits>

#include "framework/core/thread_pool.h"
#include "framework/ops/kernels/cpu/bfloat16_runs.h"
#include "framework/ops/kernels/elementwise_loops.h"

namespace kestrel::kernels::KESTREL_CPU_LEVEL {
namespace {

template <class Src, class Dst>
Dst convert_one(Src v) {
  if constexpr (std::is_same_v<Dst, bool>) {
    return static_cast<float>(v) != 0.0f;
  } else if constexpr (std::is_same_v<Dst, bfloat16>) {
    return bfloat16(static_cast<float>(v));  // through float32: bfloat16 rounds from it alone
  } else if constexpr (std::is_same_v<Src, bfloat16>) {
    return static_cast<Dst>(static_cast<float>(v));
  } else {
    return static_cast<Dst>(v);
  }
}

}  // namespace

void convert(const TensorView& in, const TensorView& out) {
  // Between the floats: the block conversions below, in chunks over the thread pool.
  if (in.dtype == DType::float32 && out.dtype == DType::bfloat16) {
    return parallel_for(in.numel(), kElementwiseGrain, [&](std::int64_t lo, std::int64_t hi) {
      round_to_bfloat16(in.as<float>() + lo, hi - lo, out.as<bfloat16>() + lo);
    });
  }
  if (in.dtype == DType::bfloat16 && out.dtype == DType::float32) {
    return parallel_for(in.numel(), kElementwiseGrain, [&](std::int64_t lo, std::int64_t hi) {
      widen_bfloat16(in.as<bfloat16>() + lo, hi - lo, out.as<float>() + lo);
    });
  }
  visit_dtype(in.dtype, [&](auto src) {
    visit_dtype(out.dtype, [&](auto dst) {
      using Src = decltype(src);
      using Dst = decltype(dst);
      unary_loop<Src, Dst>(in, out, [](Src v) { return convert_one<Src, Dst>(v); });
    });
  });
}

void widen_bfloat16(const bfloat16* in, std::int64_t n, float* out) { widen_run(in, n, out); }

void round_to_bfloat16(const float* in, std::int64_t n, bfloat16* out) { round_run(in, n, out); }

}  // namespace kestrel::kernels::KESTREL_CPU_LEVEL
