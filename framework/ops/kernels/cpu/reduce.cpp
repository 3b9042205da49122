// Sum and max over axes, for every CPU level (the ops are framework/ops/primitives/reduce.cpp).
// bfloat16 is summed in float32 as it is read, so no widened copy of the input is made.
#include "framework/ops/kernels/cpu/level.h"

#include <Eigen/Core>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "framework/core/thread_pool.h"
#include "framework/ops/kernels/aligned_buffer.h"

namespace kestrel::kernels::KESTREL_CPU_LEVEL {
namespace {

template <class T>
T identity(Reduction r) {
  if (r == Reduction::sum) return T(0);
  return std::numeric_limits<T>::lowest();
}

/// Columns a column reduction's task accumulates: a 256-byte piece of each row, and a bias
/// gradient 128 wide splits in two.
constexpr std::int64_t kColumnBlock = 64;

/// acc[i] = the sum (or max) of rows[l * stride + i] over l < length, in row order, for i < width.
/// Width, when nonzero, fixes the width at compile time.
template <std::int64_t Width = 0, class In, class T>
void accumulate_rows(const In* rows, std::int64_t length, std::int64_t stride, Reduction r, T* acc,
                     std::int64_t width = Width) {
  const std::int64_t n = Width != 0 ? Width : width;
  std::fill(acc, acc + n, identity<T>(r));
  for (std::int64_t l = 0; l < length; ++l) {
    const In* row = rows + l * stride;
    if (r == Reduction::sum) {
      for (std::int64_t i = 0; i < n; ++i) acc[i] += static_cast<T>(row[i]);
    } else {
      for (std::int64_t i = 0; i < n; ++i) acc[i] = std::max(acc[i], static_cast<T>(row[i]));
    }
  }
}

/// Reduces the middle axis of a [outer, length, inner] view into [outer, inner]. In is the input's
/// element type: T itself, or bfloat16 read as the float32 it widens to (exactly), so the sums are
/// those of the widened tensor, in the same order.
template <class In, class T>
void reduce_middle(const In* in, T* out, std::int64_t outer, std::int64_t length, std::int64_t inner, Reduction r) {
  if (inner == 1) {
    const std::int64_t grain = std::max<std::int64_t>(1, (1 << 15) / std::max<std::int64_t>(1, length));
    // Row reductions: Eigen's vectorized partial sums keep float error low over long rows.
    parallel_for(outer, grain, [&](std::int64_t lo, std::int64_t hi) {
      // Eigen's sum starts its vector packets at the first aligned element, so the order of its
      // adds depends on where a row lies. A widened row goes where it would lie in the input
      // widened whole into an aligned buffer: at (o * length) mod 16 floats past a 64-byte line.
      AlignedBuffer<T> widened;
      constexpr std::int64_t kLine = static_cast<std::int64_t>(AlignedBuffer<T>::kAlignment / sizeof(T));
      for (std::int64_t o = lo; o < hi; ++o) {
        const T* values;
        if constexpr (std::is_same_v<In, T>) {
          values = in + o * length;
        } else {
          T* row = widened.get(static_cast<std::size_t>(length + kLine)) + (o * length) % kLine;
          widen_bfloat16(in + o * length, length, row);
          values = row;
        }
        Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> row(values, length);
        out[o] = length == 0 ? identity<T>(r) : (r == Reduction::sum ? row.sum() : row.maxCoeff());
      }
    });
    return;
  }
  // Column reductions: each column's values are accumulated row after row, so the inner loop runs
  // over contiguous memory. The work is cut into blocks of columns as well as along `outer`: a
  // bias gradient ([rows, n] summed over its rows) has an outer of 1, and would otherwise run on
  // one thread. Every column is still summed in row order, so the bits do not depend on the cut.
  const std::int64_t blocks_per_outer = (inner + kColumnBlock - 1) / kColumnBlock;
  const std::int64_t block_grain =
      std::max<std::int64_t>(1, (1 << 15) / std::max<std::int64_t>(1, length * std::min(inner, kColumnBlock)));
  parallel_for(outer * blocks_per_outer, block_grain, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t unit = lo; unit < hi; ++unit) {
      const std::int64_t o = unit / blocks_per_outer;
      const std::int64_t begin = (unit % blocks_per_outer) * kColumnBlock;
      const std::int64_t width = std::min(kColumnBlock, inner - begin);
      const In* const first_row = in + o * length * inner + begin;
      T* const result = out + o * inner + begin;
      if (width == kColumnBlock) {
        // A whole block accumulates in a local array of fixed size, which the compiler can keep in
        // registers across the rows instead of loading and storing the output at every row
        // (kernels_bench column_sum: 1.3-1.6x on one thread).
        std::array<T, kColumnBlock> acc;
        accumulate_rows<kColumnBlock>(first_row, length, inner, r, acc.data());
        std::copy(acc.begin(), acc.end(), result);
      } else {
        accumulate_rows(first_row, length, inner, r, result, width);
      }
    }
  });
}

/// Reduces the given axes of `in` into `out`, one contiguous run of reduced axes at a time,
/// innermost first, through temporaries of T. In is the input's element type (see reduce_middle);
/// a bfloat16 output is the float32 result rounded once, at the end.
template <class In, class T>
void reduce_axes(const TensorView& in, const TensorView& out, const std::vector<int>& axes, Reduction r) {
  std::vector<std::int64_t> dims = in.shape.to_vector();
  std::vector<bool> reduced(dims.size(), false);
  for (int a : axes) reduced[static_cast<std::size_t>(a)] = true;

  std::vector<T> scratch_a, scratch_b;
  const T* src = nullptr;  // the last run's result; null while the input has not been read
  int d = static_cast<int>(dims.size()) - 1;
  while (d >= 0) {
    if (!reduced[static_cast<std::size_t>(d)]) {
      --d;
      continue;
    }
    int end = d;  // reduced run [start, end]
    while (d >= 0 && reduced[static_cast<std::size_t>(d)]) --d;
    int start = d + 1;
    std::int64_t outer = 1, length = 1, inner = 1;
    for (int i = 0; i < start; ++i) outer *= dims[static_cast<std::size_t>(i)];
    for (int i = start; i <= end; ++i) length *= dims[static_cast<std::size_t>(i)];
    for (std::size_t i = static_cast<std::size_t>(end) + 1; i < dims.size(); ++i) inner *= dims[i];
    bool last_run = true;
    for (int i = 0; i < start; ++i) last_run &= !reduced[static_cast<std::size_t>(i)];
    T* dst;
    if (last_run && out.dtype != DType::bfloat16) {
      dst = out.as<T>();
    } else {
      std::vector<T>& buf = (src == scratch_a.data()) ? scratch_b : scratch_a;
      buf.resize(static_cast<std::size_t>(outer * inner));
      dst = buf.data();
    }
    if (src == nullptr) {
      reduce_middle<In, T>(in.as<In>(), dst, outer, length, inner, r);
    } else {
      reduce_middle<T, T>(src, dst, outer, length, inner, r);
    }
    src = dst;
    for (int i = start; i <= end; ++i) dims[static_cast<std::size_t>(i)] = 1;
  }
  if (src == nullptr) {
    // No axes to reduce: the output is the input (widened, into a float32 output of bfloat16).
    if constexpr (!std::is_same_v<In, T>) {
      if (out.dtype != in.dtype) return widen_bfloat16(in.as<In>(), in.numel(), out.as<T>());
    }
    std::copy(in.as<In>(), in.as<In>() + in.numel(), out.as<In>());
  } else if constexpr (std::is_same_v<T, float>) {
    if (out.dtype == DType::bfloat16) round_to_bfloat16(src, out.numel(), out.as<bfloat16>());
  }
}

}  // namespace

void reduce(const TensorView& in, const TensorView& out, std::span<const int> axes, Reduction r) {
  const std::vector<int> sorted(axes.begin(), axes.end());
  switch (in.dtype) {
    case DType::float32: return reduce_axes<float, float>(in, out, sorted, r);
    case DType::bfloat16: return reduce_axes<bfloat16, float>(in, out, sorted, r);
    case DType::int32: return reduce_axes<std::int32_t, std::int32_t>(in, out, sorted, r);
    case DType::int64: return reduce_axes<std::int64_t, std::int64_t>(in, out, sorted, r);
    case DType::bool_:  // rejected by the op's shape rule
      return;
  }
}

}  // namespace kestrel::kernels::KESTREL_CPU_LEVEL
