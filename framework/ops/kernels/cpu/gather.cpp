// gather's row copies and scatter_add's accumulation, for every CPU level (the ops and their
// index checks are framework/ops/primitives/gather.cpp; indices arrive checked, as int64).
#include "framework/ops/kernels/cpu/level.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "framework/core/thread_pool.h"

namespace kestrel::kernels::KESTREL_CPU_LEVEL {
namespace {

// scatter_add splits columns no finer than this, so each task still streams whole cache lines.
constexpr std::int64_t kMinColumns = 16;

template <class T>
void scatter_add_columns(std::span<const std::int64_t> indices, const T* updates, T* out, std::int64_t outer,
                         std::int64_t n, std::int64_t inner) {
  const auto k_count = static_cast<std::int64_t>(indices.size());
  // Each task owns a block of output columns and adds every update into it in index order, so
  // repeated indices accumulate in the same order on any number of threads.
  std::int64_t splits = (4 * num_threads() + outer - 1) / std::max<std::int64_t>(outer, 1);
  splits = std::clamp<std::int64_t>(splits, 1, std::max<std::int64_t>(1, inner / kMinColumns));
  const std::int64_t columns = (inner + splits - 1) / splits;
  const std::int64_t work = std::max<std::int64_t>(1, (n + k_count) * columns * static_cast<std::int64_t>(sizeof(T)));
  std::int64_t grain = std::max<std::int64_t>(1, kCopyGrainBytes / work);
  parallel_for(outer * splits, grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t task = begin; task < end; ++task) {
      std::int64_t o = task / splits;
      std::int64_t c0 = (task % splits) * columns;
      std::int64_t c1 = std::min(c0 + columns, inner);
      if (c0 >= c1) continue;
      T* out_block = out + o * n * inner;
      for (std::int64_t r = 0; r < n; ++r) std::fill(out_block + r * inner + c0, out_block + r * inner + c1, T{});
      const T* upd_block = updates + o * k_count * inner;
      for (std::int64_t k = 0; k < k_count; ++k) {
        T* dst = out_block + indices[static_cast<std::size_t>(k)] * inner;
        const T* src = upd_block + k * inner;
        for (std::int64_t c = c0; c < c1; ++c) dst[c] += src[c];
      }
    }
  });
}

}  // namespace

void gather_rows(const void* params, std::span<const std::int64_t> indices, void* out, std::int64_t outer,
                 std::int64_t n, std::size_t row_bytes) {
  const auto k_count = static_cast<std::int64_t>(indices.size());
  const auto* src = static_cast<const std::uint8_t*>(params);
  auto* dst = static_cast<std::uint8_t*>(out);
  const std::int64_t grain = std::max<std::int64_t>(1, kCopyGrainBytes / static_cast<std::int64_t>(row_bytes));
  parallel_for(outer * k_count, grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t task = begin; task < end; ++task) {
      const std::int64_t o = task / k_count;
      const std::int64_t row = o * n + indices[static_cast<std::size_t>(task % k_count)];
      std::memcpy(dst + static_cast<std::size_t>(task) * row_bytes, src + static_cast<std::size_t>(row) * row_bytes,
                  row_bytes);
    }
  });
}

void scatter_add(std::span<const std::int64_t> indices, const TensorView& updates, const TensorView& out,
                 std::int64_t outer, std::int64_t n, std::int64_t inner) {
  switch (out.dtype) {
    case DType::int32:
      return scatter_add_columns(indices, updates.as<std::int32_t>(), out.as<std::int32_t>(), outer, n, inner);
    case DType::int64:
      return scatter_add_columns(indices, updates.as<std::int64_t>(), out.as<std::int64_t>(), outer, n, inner);
    case DType::float32:
    case DType::bfloat16:  // arrives widened to float32, so sums are rounded once, at the end
      return scatter_add_columns(indices, updates.as<float>(), out.as<float>(), outer, n, inner);
    case DType::bool_:  // rejected by the op's shape rule
      return;
  }
}

}  // namespace kestrel::kernels::KESTREL_CPU_LEVEL
