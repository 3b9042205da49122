// Sum and max over axes, for every CPU level (the ops are framework/ops/primitives/reduce.cpp).
#include "framework/ops/kernels/cpu/level.h"

#include <Eigen/Core>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "framework/core/thread_pool.h"

namespace kestrel::kernels::KESTREL_CPU_LEVEL {
namespace {

template <class T>
T identity(Reduction r) {
  if (r == Reduction::sum) return T(0);
  return std::numeric_limits<T>::lowest();
}

/// Reduces the middle axis of a [outer, length, inner] view into [outer, inner].
template <class T>
void reduce_middle(const T* in, T* out, std::int64_t outer, std::int64_t length, std::int64_t inner, Reduction r) {
  const std::int64_t grain = std::max<std::int64_t>(1, (1 << 15) / std::max<std::int64_t>(1, length * inner));
  if (inner == 1) {
    // Row reductions: Eigen's vectorized partial sums keep float error low over long rows.
    parallel_for(outer, grain, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t o = lo; o < hi; ++o) {
        Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> row(in + o * length, length);
        out[o] = length == 0 ? identity<T>(r) : (r == Reduction::sum ? row.sum() : row.maxCoeff());
      }
    });
    return;
  }
  // Column reductions: accumulate whole rows so the inner loop runs over contiguous memory.
  parallel_for(outer, grain, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t o = lo; o < hi; ++o) {
      T* acc = out + o * inner;
      std::fill(acc, acc + inner, identity<T>(r));
      for (std::int64_t l = 0; l < length; ++l) {
        const T* row = in + (o * length + l) * inner;
        if (r == Reduction::sum) {
          for (std::int64_t i = 0; i < inner; ++i) acc[i] += row[i];
        } else {
          for (std::int64_t i = 0; i < inner; ++i) acc[i] = std::max(acc[i], row[i]);
        }
      }
    }
  });
}

/// Reduces the given axes of `in` into `out`, one contiguous run of reduced axes at a time,
/// innermost first, through temporaries.
template <class T>
void reduce_axes(const TensorView& in, const TensorView& out, const std::vector<int>& axes, Reduction r) {
  std::vector<std::int64_t> dims = in.shape.to_vector();
  std::vector<bool> reduced(dims.size(), false);
  for (int a : axes) reduced[static_cast<std::size_t>(a)] = true;

  std::vector<T> scratch_a, scratch_b;
  const T* src = in.as<T>();
  int d = static_cast<int>(dims.size()) - 1;
  bool wrote_output = false;
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
    if (last_run) {
      dst = out.as<T>();
      wrote_output = true;
    } else {
      std::vector<T>& buf = (src == scratch_a.data()) ? scratch_b : scratch_a;
      buf.resize(static_cast<std::size_t>(outer * inner));
      dst = buf.data();
    }
    reduce_middle<T>(src, dst, outer, length, inner, r);
    src = dst;
    for (int i = start; i <= end; ++i) dims[static_cast<std::size_t>(i)] = 1;
  }
  if (!wrote_output) {
    // No axes to reduce: the output is the input.
    std::copy(in.as<T>(), in.as<T>() + in.numel(), out.as<T>());
  }
}

}  // namespace

void reduce(const TensorView& in, const TensorView& out, std::span<const int> axes, Reduction r) {
  const std::vector<int> sorted(axes.begin(), axes.end());
  switch (in.dtype) {
    case DType::float32: return reduce_axes<float>(in, out, sorted, r);
    case DType::int32: return reduce_axes<std::int32_t>(in, out, sorted, r);
    case DType::int64: return reduce_axes<std::int64_t>(in, out, sorted, r);
    case DType::bfloat16:  // widened by the dispatcher
    case DType::bool_:     // rejected by the op's shape rule
      return;
  }
}

}  // namespace kestrel::kernels::KESTREL_CPU_LEVEL
