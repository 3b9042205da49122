// 2-D max and average pooling over NHWC images and their gradients, for every CPU level.
//
// Padded positions never count: a max ignores them and an average divides by the number of real
// elements. Every loop runs with channels innermost, over contiguous memory. Kernels that scatter
// into an image (the two backprops) split their work by whole images, since overlapping windows
// add into the same elements.
#include "framework/ops/kernels/cpu/level.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "framework/core/thread_pool.h"

namespace kestrel::kernels::KESTREL_CPU_LEVEL {
namespace {

// Window elements (times channels) below which a share of the work is not worth a thread.
constexpr std::int64_t kMinWorkPerTask = 1 << 15;

// The real (unpadded) rows or columns [begin, end) of a window starting at `start`.
struct Range {
  std::int64_t begin, end;
};
Range clip(std::int64_t start, std::int64_t window, std::int64_t extent) {
  return {std::max<std::int64_t>(start, 0), std::min(start + window, extent)};
}

template <class Fn>
void for_each_output_row(const PoolGeometry& g, Fn&& fn) {
  parallel_for(g.batch * g.out_h,
               std::max<std::int64_t>(1, kMinWorkPerTask / std::max<std::int64_t>(g.work_per_output_row(), 1)),
               [&](std::int64_t b, std::int64_t e) {
                 for (std::int64_t row = b; row < e; ++row) fn(row / g.out_h, row % g.out_h);
               });
}

template <class Fn>
void for_each_image(const PoolGeometry& g, Fn&& fn) {
  const std::int64_t per_image = g.out_h * g.work_per_output_row();
  parallel_for(g.batch, std::max<std::int64_t>(1, kMinWorkPerTask / std::max<std::int64_t>(per_image, 1)),
               [&](std::int64_t b, std::int64_t e) {
                 for (std::int64_t n = b; n < e; ++n) fn(n);
               });
}

// For output pixel (i, j) of one image: per channel, the pixel offset (y * in_w + x) of the
// window's first maximum in row-major scan order. Branch-free selects let the channel loop
// vectorize; pool_geometry keeps offsets within int32.
void window_argmax(const PoolGeometry& g, const float* image, std::int64_t i, std::int64_t j, float* best,
                   std::int32_t* where) {
  const Range rows = clip(i * g.stride_h - g.pad_top, g.k_h, g.in_h);
  const Range cols = clip(j * g.stride_w - g.pad_left, g.k_w, g.in_w);
  const std::int64_t c = g.channels;
  const auto first = static_cast<std::int32_t>(rows.begin * g.in_w + cols.begin);
  std::copy(image + first * c, image + (first + 1) * c, best);
  std::fill(where, where + c, first);
  for (std::int64_t y = rows.begin; y < rows.end; ++y) {
    for (std::int64_t x = cols.begin; x < cols.end; ++x) {
      const auto at = static_cast<std::int32_t>(y * g.in_w + x);
      const float* v = image + at * c;
      for (std::int64_t ch = 0; ch < c; ++ch) {
        // Unconditional stores: a conditional one compiles to a mispredicted branch per vector.
        const float b = best[ch];
        const std::int32_t w = where[ch];
        const std::int32_t greater = v[ch] > b;
        best[ch] = std::max(b, v[ch]);
        where[ch] = w + greater * (at - w);
      }
    }
  }
}

// Per-thread scratch for window_argmax: the running maximum and its offset per channel.
struct ArgmaxScratch {
  explicit ArgmaxScratch(std::int64_t channels)
      : best(static_cast<std::size_t>(channels)), where(static_cast<std::size_t>(channels)) {}
  std::vector<float> best;
  std::vector<std::int32_t> where;
};

// True when every pixel lies in at most one window, and in exactly one when `covered` is set.
bool disjoint_windows(const PoolGeometry& g, bool& covered) {
  covered = g.stride_h == g.k_h && g.stride_w == g.k_w && g.out_h * g.k_h - g.pad_top >= g.in_h &&
            g.out_w * g.k_w - g.pad_left >= g.in_w;
  return g.stride_h >= g.k_h && g.stride_w >= g.k_w;
}

}  // namespace

void max_pool2d(const PoolGeometry& g, const float* x, float* y) {
  const std::int64_t c = g.channels;
  for_each_output_row(g, [&](std::int64_t n, std::int64_t i) {
    const float* image = x + n * g.image_size();
    const Range rows = clip(i * g.stride_h - g.pad_top, g.k_h, g.in_h);
    for (std::int64_t j = 0; j < g.out_w; ++j) {
      const Range cols = clip(j * g.stride_w - g.pad_left, g.k_w, g.in_w);
      float* out = y + ((n * g.out_h + i) * g.out_w + j) * c;
      std::fill(out, out + c, -std::numeric_limits<float>::infinity());
      for (std::int64_t yy = rows.begin; yy < rows.end; ++yy) {
        for (std::int64_t xx = cols.begin; xx < cols.end; ++xx) {
          const float* v = image + (yy * g.in_w + xx) * c;
          for (std::int64_t ch = 0; ch < c; ++ch) out[ch] = std::max(out[ch], v[ch]);
        }
      }
    }
  });
}

void max_pool2d_backprop(const PoolGeometry& g, const float* x, const float* dy, float* dx) {
  const std::int64_t c = g.channels;
  bool covered = false;
  const bool disjoint = disjoint_windows(g, covered);
  for_each_image(g, [&](std::int64_t n) {
    ArgmaxScratch scratch(c);
    float* grad = dx + n * g.image_size();
    if (!covered) std::fill(grad, grad + g.image_size(), 0.0f);
    for (std::int64_t i = 0; i < g.out_h; ++i) {
      const Range rows = clip(i * g.stride_h - g.pad_top, g.k_h, g.in_h);
      for (std::int64_t j = 0; j < g.out_w; ++j) {
        window_argmax(g, x + n * g.image_size(), i, j, scratch.best.data(), scratch.where.data());
        const float* d = dy + ((n * g.out_h + i) * g.out_w + j) * c;
        const std::int32_t* where = scratch.where.data();
        if (!disjoint) {
          for (std::int64_t ch = 0; ch < c; ++ch) grad[where[ch] * c + ch] += d[ch];
          continue;
        }
        // No other window touches these pixels: write each one once, dy or zero, in one pass.
        const Range cols = clip(j * g.stride_w - g.pad_left, g.k_w, g.in_w);
        for (std::int64_t y = rows.begin; y < rows.end; ++y) {
          for (std::int64_t xx = cols.begin; xx < cols.end; ++xx) {
            const auto at = static_cast<std::int32_t>(y * g.in_w + xx);
            float* out = grad + at * c;
            for (std::int64_t ch = 0; ch < c; ++ch) out[ch] = where[ch] == at ? d[ch] : 0.0f;
          }
        }
      }
    }
  });
}

void max_pool2d_select(const PoolGeometry& g, const float* x, const float* values, float* out) {
  const std::int64_t c = g.channels;
  for_each_output_row(g, [&](std::int64_t n, std::int64_t i) {
    ArgmaxScratch scratch(c);
    const float* picked = values + n * g.image_size();
    for (std::int64_t j = 0; j < g.out_w; ++j) {
      window_argmax(g, x + n * g.image_size(), i, j, scratch.best.data(), scratch.where.data());
      float* o = out + ((n * g.out_h + i) * g.out_w + j) * c;
      for (std::int64_t ch = 0; ch < c; ++ch) o[ch] = picked[scratch.where[ch] * c + ch];
    }
  });
}

void avg_pool2d(const PoolGeometry& g, const float* x, float* y) {
  const std::int64_t c = g.channels;
  for_each_output_row(g, [&](std::int64_t n, std::int64_t i) {
    const float* image = x + n * g.image_size();
    const Range rows = clip(i * g.stride_h - g.pad_top, g.k_h, g.in_h);
    for (std::int64_t j = 0; j < g.out_w; ++j) {
      const Range cols = clip(j * g.stride_w - g.pad_left, g.k_w, g.in_w);
      float* out = y + ((n * g.out_h + i) * g.out_w + j) * c;
      std::fill(out, out + c, 0.0f);
      for (std::int64_t yy = rows.begin; yy < rows.end; ++yy) {
        for (std::int64_t xx = cols.begin; xx < cols.end; ++xx) {
          const float* v = image + (yy * g.in_w + xx) * c;
          for (std::int64_t ch = 0; ch < c; ++ch) out[ch] += v[ch];
        }
      }
      const std::int64_t count = (rows.end - rows.begin) * (cols.end - cols.begin);
      const float scale = count > 0 ? 1.0f / static_cast<float>(count) : 0.0f;
      for (std::int64_t ch = 0; ch < c; ++ch) out[ch] *= scale;
    }
  });
}

void avg_pool2d_backprop(const PoolGeometry& g, const float* dy, float* dx) {
  const std::int64_t c = g.channels;
  for_each_image(g, [&](std::int64_t n) {
    float* grad = dx + n * g.image_size();
    std::fill(grad, grad + g.image_size(), 0.0f);
    for (std::int64_t i = 0; i < g.out_h; ++i) {
      const Range rows = clip(i * g.stride_h - g.pad_top, g.k_h, g.in_h);
      for (std::int64_t j = 0; j < g.out_w; ++j) {
        const Range cols = clip(j * g.stride_w - g.pad_left, g.k_w, g.in_w);
        const std::int64_t count = (rows.end - rows.begin) * (cols.end - cols.begin);
        if (count == 0) continue;
        const float scale = 1.0f / static_cast<float>(count);
        const float* d = dy + ((n * g.out_h + i) * g.out_w + j) * c;
        for (std::int64_t yy = rows.begin; yy < rows.end; ++yy) {
          for (std::int64_t xx = cols.begin; xx < cols.end; ++xx) {
            float* v = grad + (yy * g.in_w + xx) * c;
            for (std::int64_t ch = 0; ch < c; ++ch) v[ch] += d[ch] * scale;
          }
        }
      }
    }
  });
}

}  // namespace kestrel::kernels::KESTREL_CPU_LEVEL
