// Layer normalization over the last axis and its gradients in x and gamma, for every CPU level (the ops and
// their checks are framework/ops/primitives/layer_norm.cpp).
//
// Mean and variance are computed in two passes in float32 (the mean first, then the squared
// deviations from it), which avoids the cancellation of E[x^2] - E[x]^2 on rows with a large mean.
// Both kernels compute them with the same function, so the backward pass normalizes exactly as
// the forward did.
#include "framework/ops/kernels/cpu/level.h"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>

#include "framework/core/thread_pool.h"

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

}  // namespace

void layer_norm(const float* x, const float* gamma, const float* beta, float* y, std::int64_t rows, std::int64_t d,
                float epsilon) {
  ConstArrayMap scale(gamma, d);
  ConstArrayMap shift(beta, d);
  const float inv_d = 1.0f / static_cast<float>(d);
  for_each_row(rows, d, [&](std::int64_t r) {
    ConstArrayMap in(x + r * d, d);
    ArrayMap out(y + r * d, d);  // holds the centered row until the last step
    const float rstd = center_row(in, out, inv_d, epsilon);
    out = out * (rstd * scale) + shift;
  });
}

// With xhat = (x - mean) * rstd and gg = dy * gamma, per row:
//   dx = rstd * (gg - mean(gg) - xhat * mean(gg * xhat)).
void layer_norm_backprop(const float* x, const float* gamma, const float* dy, float* dx, std::int64_t rows,
                         std::int64_t d, float epsilon) {
  ConstArrayMap scale(gamma, d);
  const float inv_d = 1.0f / static_cast<float>(d);
  for_each_row(rows, d, [&](std::int64_t r) {
    ConstArrayMap in(x + r * d, d);
    ConstArrayMap dout(dy + r * d, d);
    ArrayMap out(dx + r * d, d);  // holds the centered row until the last step
    const float rstd = center_row(in, out, inv_d, epsilon);
    const auto gg = dout * scale;
    const float mean_gg = gg.sum() * inv_d;
    // mean(gg * xhat) folded with xhat's own rstd: the centered row times this is xhat * mean(gg * xhat).
    const float xhat_coefficient = (gg * out).sum() * inv_d * rstd * rstd;
    out = rstd * (gg - mean_gg - out * xhat_coefficient);
  });
}

void layer_norm_gamma_partial(const float* x, const float* dy, float* partial, float* centered, std::int64_t rows,
                              std::int64_t d, float epsilon) {
  const float inv_d = 1.0f / static_cast<float>(d);
  ArrayMap sum(partial, d);
  ArrayMap row(centered, d);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float rstd = center_row(ConstArrayMap(x + r * d, d), row, inv_d, epsilon);
    sum += ConstArrayMap(dy + r * d, d) * (row * rstd);
  }
}

}  // namespace kestrel::kernels::KESTREL_CPU_LEVEL
