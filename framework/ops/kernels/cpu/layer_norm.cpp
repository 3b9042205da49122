// Layer normalization over the last axis and its gradients in x and gamma, for every CPU level (the ops and
// their checks are framework/ops/primitives/layer_norm.cpp), over float32 or bfloat16 rows.
//
// Mean and variance are computed in two passes in float32 (the mean first, then the squared
// deviations from it), which avoids the cancellation of E[x^2] - E[x]^2 on rows with a large mean.
// Both kernels compute them with the same function, so the backward pass normalizes exactly as
// the forward did.
//
// A bfloat16 row is widened as the kernel reaches it, into the calling thread's buffer, and a
// bfloat16 result row is rounded as it is finished: the loads of the next rows overlap the
// arithmetic, where widening a block of rows first would stall on memory and then compute. The
// staged row sits where it would in a whole widened tensor modulo 64 bytes (tensor data is 64-byte
// aligned), so Eigen's vector loops split it alike and the bits are those of widening the whole
// tensor, running the float32 kernel and rounding.
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

constexpr std::int64_t kGrainElements = 1 << 14;

// Runs row_fn(r) for each of `rows` rows of d elements, in parallel chunks of about
// kGrainElements elements.
template <class RowFn>
void for_each_row(std::int64_t rows, std::int64_t d, const RowFn& row_fn) {
  parallel_for(rows, std::max<std::int64_t>(1, kGrainElements / d), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) row_fn(r);
  });
}

// Each thread's float32 row buffers: one per row a kernel holds at once.
enum class Slot : std::size_t { x, dy, out, count };
thread_local std::array<AlignedBuffer<float>, static_cast<std::size_t>(Slot::count)> t_rows;

// Room for the row [offset, offset + d) staged (aligned_buffer.h's staged_run).
float* staging(Slot slot, std::int64_t offset, std::int64_t d) {
  return staged_run(t_rows[static_cast<std::size_t>(slot)], offset, d);
}

// Elements [offset, offset + d) of `data` as float32: in place, or widened into `slot`.
template <class T>
const float* read_row(const T* data, std::int64_t offset, std::int64_t d, Slot slot) {
  if constexpr (std::is_same_v<T, float>) {
    return data + offset;
  } else {
    float* row = staging(slot, offset, d);
    widen_run(data + offset, d, row);
    return row;
  }
}

// Where a result row [offset, offset + d) of `data` is computed: in place, or in `slot` until
// finish_row rounds it into place.
template <class T>
float* result_row(T* data, std::int64_t offset, std::int64_t d, Slot slot) {
  if constexpr (std::is_same_v<T, float>) {
    return data + offset;
  } else {
    return staging(slot, offset, d);
  }
}

template <class T>
void finish_row(const float* row, T* data, std::int64_t offset, std::int64_t d) {
  if constexpr (!std::is_same_v<T, float>) round_run(row, d, data + offset);
}

// Writes the row minus its mean into `centered` and returns 1 / sqrt(var + epsilon), with the
// population variance (divided by d). Forced inline: as a call per row it slowed layer_norm on
// [32,128,128] by about 12%.
[[gnu::always_inline]] inline float center_row(const ConstArrayMap& in, ArrayMap& centered, float inv_d,
                                               float epsilon) {
  // Summing offsets from the first element keeps the sum small when the row's mean is large.
  const float pivot = in[0];
  const float mean = pivot + (in - pivot).sum() * inv_d;
  centered = in - mean;
  return 1.0f / std::sqrt(centered.square().sum() * inv_d + epsilon);
}

template <class T>
void layer_norm_rows(const T* x, const float* gamma, const float* beta, T* y, std::int64_t rows, std::int64_t d,
                     float epsilon) {
  ConstArrayMap scale(gamma, d);
  ConstArrayMap shift(beta, d);
  const float inv_d = 1.0f / static_cast<float>(d);
  for_each_row(rows, d, [&](std::int64_t r) {
    const std::int64_t offset = r * d;
    ConstArrayMap in(read_row(x, offset, d, Slot::x), d);
    float* const out_row = result_row(y, offset, d, Slot::out);
    ArrayMap out(out_row, d);  // holds the centered row until the last step
    const float rstd = center_row(in, out, inv_d, epsilon);
    out = out * (rstd * scale) + shift;
    finish_row(out_row, y, offset, d);
  });
}

// With xhat = (x - mean) * rstd and gg = dy * gamma, per row:
//   dx = rstd * (gg - mean(gg) - xhat * mean(gg * xhat)).
template <class X, class Dy>
void layer_norm_backprop_rows(const X* x, const float* gamma, const Dy* dy, X* dx, std::int64_t rows, std::int64_t d,
                              float epsilon) {
  ConstArrayMap scale(gamma, d);
  const float inv_d = 1.0f / static_cast<float>(d);
  for_each_row(rows, d, [&](std::int64_t r) {
    const std::int64_t offset = r * d;
    ConstArrayMap in(read_row(x, offset, d, Slot::x), d);
    ConstArrayMap dout(read_row(dy, offset, d, Slot::dy), d);
    float* const out_row = result_row(dx, offset, d, Slot::out);
    ArrayMap out(out_row, d);  // holds the centered row until the last step
    const float rstd = center_row(in, out, inv_d, epsilon);
    const auto gg = dout * scale;
    const float mean_gg = gg.sum() * inv_d;
    // mean(gg * xhat) folded with xhat's own rstd: the centered row times this is xhat * mean(gg * xhat).
    const float xhat_coefficient = (gg * out).sum() * inv_d * rstd * rstd;
    out = rstd * (gg - mean_gg - out * xhat_coefficient);
    finish_row(out_row, dx, offset, d);
  });
}

template <class X, class Dy>
void layer_norm_gamma_partial_rows(const X* x, const Dy* dy, float* partial, std::int64_t first, std::int64_t rows,
                                   std::int64_t d, float epsilon) {
  const float inv_d = 1.0f / static_cast<float>(d);
  ArrayMap sum(partial, d);
  ArrayMap row(staging(Slot::out, 0, d), d);
  for (std::int64_t r = first; r < first + rows; ++r) {
    const std::int64_t offset = r * d;
    const float rstd = center_row(ConstArrayMap(read_row(x, offset, d, Slot::x), d), row, inv_d, epsilon);
    sum += ConstArrayMap(read_row(dy, offset, d, Slot::dy), d) * (row * rstd);
  }
}

// Calls fn(p) with t's data as const float* or const bfloat16*.
template <class Fn>
void with_floats(const TensorView& t, const Fn& fn) {
  if (t.dtype == DType::bfloat16) {
    fn(static_cast<const bfloat16*>(t.data));
  } else {
    fn(static_cast<const float*>(t.data));
  }
}

}  // namespace

void layer_norm(const TensorView& x, const float* gamma, const float* beta, const TensorView& y, float epsilon) {
  const std::int64_t d = x.shape[-1];
  if (x.numel() == 0) return;
  with_floats(x, [&](auto in) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(in)>>;
    layer_norm_rows<T>(in, gamma, beta, y.as<T>(), x.numel() / d, d, epsilon);
  });
}

void layer_norm_backprop(const TensorView& x, const float* gamma, const TensorView& dy, const TensorView& dx,
                         float epsilon) {
  const std::int64_t d = x.shape[-1];
  if (x.numel() == 0) return;
  with_floats(x, [&](auto in) {
    with_floats(dy, [&](auto dout) {
      using X = std::remove_const_t<std::remove_pointer_t<decltype(in)>>;
      layer_norm_backprop_rows(in, gamma, dout, dx.as<X>(), x.numel() / d, d, epsilon);
    });
  });
}

void layer_norm_gamma_partial(const TensorView& x, const TensorView& dy, float* partial, std::int64_t first,
                              std::int64_t rows, float epsilon) {
  const std::int64_t d = x.shape[-1];
  with_floats(x, [&](auto in) {
    with_floats(dy, [&](auto dout) { layer_norm_gamma_partial_rows(in, dout, partial, first, rows, d, epsilon); });
  });
}

}  // namespace kestrel::kernels::KESTREL_CPU_LEVEL
