// softmax and log_softmax over one axis, for every CPU level.
//
// The axis splits a tensor into [outer, n, inner]. For the last axis (inner == 1) each row is
// contiguous and is done in one pass with Eigen's vectorized exp; other axes work on blocks of
// adjacent columns so the inner loops still run over contiguous memory.
#include "framework/ops/kernels/cpu/level.h"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>

#include "framework/core/thread_pool.h"

namespace kestrel::kernels::KESTREL_CPU_LEVEL {
namespace {

using ArrayMap = Eigen::Map<Eigen::ArrayXf>;
using ConstArrayMap = Eigen::Map<const Eigen::ArrayXf>;

constexpr std::int64_t kGrainElements = 1 << 14;  // elements per parallel_for chunk, at least

struct AxisSplit {
  std::int64_t outer = 1;
  std::int64_t n = 1;
  std::int64_t inner = 1;
};

AxisSplit split_at(const Shape& shape, int axis) {
  AxisSplit s;
  for (int i = 0; i < axis; ++i) s.outer *= shape[i];
  s.n = shape[axis];
  for (int i = axis + 1; i < shape.rank(); ++i) s.inner *= shape[i];
  return s;
}

// One contiguous row: subtracting the row max keeps exp from overflowing.
void row_softmax(const float* x, float* y, std::int64_t n, bool log) {
  ConstArrayMap in(x, n);
  ArrayMap out(y, n);
  const float m = in.maxCoeff();
  if (log) {
    out = in - m;
    out -= std::log(out.exp().sum());
  } else {
    out = (in - m).exp();
    out *= 1.0f / out.sum();
  }
}

}  // namespace

void softmax_columns(const float* x, float* y, std::int64_t n, std::int64_t stride, std::int64_t width, bool log) {
  auto in_row = [&](std::int64_t k) { return ConstArrayMap(x + k * stride, width); };
  auto out_row = [&](std::int64_t k) { return ArrayMap(y + k * stride, width); };
  Eigen::ArrayXf m = in_row(0);
  for (std::int64_t k = 1; k < n; ++k) m = m.max(in_row(k));
  Eigen::ArrayXf total = Eigen::ArrayXf::Zero(width);
  if (log) {
    for (std::int64_t k = 0; k < n; ++k) total += (in_row(k) - m).exp();
    Eigen::ArrayXf shift = m + total.log();
    for (std::int64_t k = 0; k < n; ++k) out_row(k) = in_row(k) - shift;
  } else {
    for (std::int64_t k = 0; k < n; ++k) {
      out_row(k) = (in_row(k) - m).exp();
      total += out_row(k);
    }
    Eigen::ArrayXf scale = total.inverse();
    for (std::int64_t k = 0; k < n; ++k) out_row(k) *= scale;
  }
}

void softmax(const float* x, float* y, const Shape& shape, int axis, bool log) {
  if (shape.numel() == 0) return;
  const AxisSplit s = split_at(shape, axis);
  if (s.inner == 1) {
    parallel_for(s.outer, std::max<std::int64_t>(1, kGrainElements / s.n), [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t r = begin; r < end; ++r) row_softmax(x + r * s.n, y + r * s.n, s.n, log);
    });
    return;
  }
  const std::int64_t blocks = (s.inner + kSoftmaxColumns - 1) / kSoftmaxColumns;
  const std::int64_t block_elements = s.n * std::min(s.inner, kSoftmaxColumns);
  parallel_for(s.outer * blocks, std::max<std::int64_t>(1, kGrainElements / block_elements),
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t task = begin; task < end; ++task) {
                   const std::int64_t o = task / blocks;
                   const std::int64_t c0 = (task % blocks) * kSoftmaxColumns;
                   const std::int64_t offset = o * s.n * s.inner + c0;
                   softmax_columns(x + offset, y + offset, s.n, s.inner, std::min(kSoftmaxColumns, s.inner - c0), log);
                 }
               });
}

}  // namespace kestrel::kernels::KESTREL_CPU_LEVEL
