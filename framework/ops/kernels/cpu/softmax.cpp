// softmax and log_softmax over one axis, for every CPU level, of float32 or bfloat16 tensors.
//
// The axis splits a tensor into [outer, n, inner]. For the last axis (inner == 1) each row is
// contiguous and is done in one pass with Eigen's vectorized exp; other axes work on blocks of
// adjacent columns so the inner loops still run over contiguous memory.
//
// bfloat16 is computed in float32: a row, or a block of columns, is widened into the calling
// thread's buffer as the kernel reaches it and rounded as it is finished. Staged data sits where it
// would in a whole widened tensor modulo 64 bytes (tensor data is 64-byte aligned), so Eigen's
// vector loops split it alike and the bits are those of widening the tensor, the float32 kernel and
// rounding.
#include "framework/ops/kernels/cpu/level.h"

#include <Eigen/Core>

#include <algorithm>
#include <array>
#include <cmath>
#include <type_traits>

#include "framework/core/thread_pool.h"
#include "framework/ops/kernels/aligned_buffer.h"
#include "framework/ops/kernels/cpu/bfloat16_runs.h"

namespace kestrel::kernels::KESTREL_CPU_LEVEL {
namespace {

using ArrayMap = Eigen::Map<Eigen::ArrayXf>;
using ConstArrayMap = Eigen::Map<const Eigen::ArrayXf>;

constexpr std::int64_t kGrainElements = 1 << 14;  // elements per parallel_for chunk, at least
// Columns per task of softmax over another axis than the last.
constexpr std::int64_t kSoftmaxColumns = 256;

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

// Each thread's float32 buffers for staged bfloat16: the input and the result.
thread_local AlignedBuffer<float> t_staged_in;
thread_local AlignedBuffer<float> t_staged_out;

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

// Row `r` of [rows, n] x into y, staged when T is bfloat16.
template <class T>
void softmax_row(const T* x, T* y, std::int64_t r, std::int64_t n, bool log) {
  const std::int64_t offset = r * n;
  if constexpr (std::is_same_v<T, float>) {
    row_softmax(x + offset, y + offset, n, log);
  } else {
    float* in = staged_run(t_staged_in, offset, n);
    float* out = staged_run(t_staged_out, offset, n);
    widen_run(x + offset, n, in);
    row_softmax(in, out, n, log);
    round_run(out, n, y + offset);
  }
}

// softmax over n rows of columns [0, width) of x [n, stride] (y alike), on the calling thread.
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

// The [n, width] column block of x [n, inner] starting at element `first` into y, staged when T
// is bfloat16: widened into rows whose stride is inner's modulo 16 floats, so that every row sits
// where it would in a whole widened tensor modulo 64 bytes.
template <class T>
void softmax_column_block(const T* x, T* y, std::int64_t first, std::int64_t n, std::int64_t inner, std::int64_t width,
                          bool log) {
  if constexpr (std::is_same_v<T, float>) {
    softmax_columns(x + first, y + first, n, inner, width, log);
  } else {
    const std::int64_t stride = width + (inner - width) % kTensorAlignFloats;
    float* in = staged_run(t_staged_in, first, n * stride);
    float* out = staged_run(t_staged_out, first, n * stride);
    for (std::int64_t k = 0; k < n; ++k) widen_run(x + first + k * inner, width, in + k * stride);
    softmax_columns(in, out, n, stride, width, log);
    for (std::int64_t k = 0; k < n; ++k) round_run(out + k * stride, width, y + first + k * inner);
  }
}

template <class T>
void softmax_of(const T* x, T* y, const Shape& shape, int axis, bool log) {
  const AxisSplit s = split_at(shape, axis);
  if (s.inner == 1) {
    parallel_for(s.outer, std::max<std::int64_t>(1, kGrainElements / s.n), [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t r = begin; r < end; ++r) softmax_row(x, y, r, s.n, log);
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
                   softmax_column_block(x, y, o * s.n * s.inner + c0, s.n, s.inner,
                                        std::min(kSoftmaxColumns, s.inner - c0), log);
                 }
               });
}

}  // namespace

void softmax(const TensorView& x, const TensorView& y, int axis, bool log) {
  if (x.numel() == 0) return;
  if (x.dtype == DType::bfloat16) {
    softmax_of(x.as<bfloat16>(), y.as<bfloat16>(), x.shape, axis, log);
  } else {
    softmax_of(x.as<float>(), y.as<float>(), x.shape, axis, log);
  }
}

}  // namespace kestrel::kernels::KESTREL_CPU_LEVEL
