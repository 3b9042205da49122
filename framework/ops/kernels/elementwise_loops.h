// Parallel loops for elementwise kernels (internal). Header-only templates, for the elementwise
// primitives' integer and bool paths and the per-level float32 and bfloat16 kernels
// (kernels/cpu/elementwise.cpp).
#pragma once

#include <algorithm>
#include <cstdint>

#include "framework/core/tensor.h"
#include "framework/core/thread_pool.h"
#include "framework/ops/kernels/broadcast.h"

namespace kestrel::kernels {

/// Below this many elements a kernel runs on one thread: waking the pool costs more.
inline constexpr std::int64_t kElementwiseGrain = 1 << 15;

/// out[i] = fn(in[i]) over all elements.
template <class In, class Out, class Fn>
void unary_loop(const TensorView& in, const TensorView& out, Fn fn) {
  const In* x = in.as<In>();
  Out* y = out.as<Out>();
  parallel_for(out.numel(), kElementwiseGrain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) y[i] = fn(x[i]);
  });
}

/// Calls run(ra, sa, rb, sb, ro, len) over out's elements, with NumPy broadcasting of a and b, in
/// contiguous runs of outputs over the thread pool: ro[k] for k < len is computed from ra[k * sa]
/// and rb[k * sb], each stride 1 (a run of the operand) or 0 (one of its elements, repeated).
template <class In, class Out, class Run>
void for_each_binary_run(const TensorView& a, const TensorView& b, const TensorView& out, const Run& run) {
  const In* pa = a.as<In>();
  const In* pb = b.as<In>();
  Out* po = out.as<Out>();
  const std::int64_t n = out.numel();
  const bool a_full = a.shape == out.shape, b_full = b.shape == out.shape;
  // The common layouts, one run per chunk: same shapes, or one operand a single element.
  if ((a_full || a.numel() == 1) && (b_full || b.numel() == 1)) {
    parallel_for(n, kElementwiseGrain, [&](std::int64_t lo, std::int64_t hi) {
      run(a_full ? pa + lo : pa, a_full ? 1 : 0, b_full ? pb + lo : pb, b_full ? 1 : 0, po + lo, hi - lo);
    });
    return;
  }
  BroadcastIndexer ix(out.shape, {a.shape, b.shape});
  const std::int64_t len = ix.run_length();
  const std::int64_t sa = ix.inner_stride(0), sb = ix.inner_stride(1);
  parallel_for(ix.runs(), std::max<std::int64_t>(1, kElementwiseGrain / len), [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t r = lo; r < hi; ++r) {
      auto base = ix.input_offsets(r);
      run(pa + base[0], sa, pb + base[1], sb, po + r * len, len);
    }
  });
}

/// out = fn(a, b) with NumPy broadcasting; each run's loop is one the compiler vectorizes.
template <class In, class Out, class Fn>
void binary_loop(const TensorView& a, const TensorView& b, const TensorView& out, Fn fn) {
  for_each_binary_run<In, Out>(
      a, b, out, [&](const In* ra, std::int64_t sa, const In* rb, std::int64_t sb, Out* ro, std::int64_t len) {
        if (sa == 1 && sb == 1) {
          for (std::int64_t k = 0; k < len; ++k) ro[k] = fn(ra[k], rb[k]);
        } else if (sa == 1) {
          const In vb = rb[0];
          for (std::int64_t k = 0; k < len; ++k) ro[k] = fn(ra[k], vb);
        } else if (sb == 1) {
          const In va = ra[0];
          for (std::int64_t k = 0; k < len; ++k) ro[k] = fn(va, rb[k]);
        } else {
          const Out v = fn(ra[0], rb[0]);
          for (std::int64_t k = 0; k < len; ++k) ro[k] = v;
        }
      });
}

/// out = fn(cond, x, y) (a select: fn(c, a, b) is c ? a : b) with NumPy broadcasting of all three.
template <class T, class Fn>
void select_loop(const TensorView& cond, const TensorView& x, const TensorView& y, const TensorView& out, Fn fn) {
  // Read as bytes: GCC does not vectorize a select on bool loads, and a bool is one 0/1 byte.
  const auto* pc = cond.as<unsigned char>();
  const T* px = x.as<T>();
  const T* py = y.as<T>();
  T* po = out.as<T>();
  // The common layouts (a full condition with full or scalar branches, as in relu's gradient)
  // get flat loops the compiler vectorizes; the general walk below cannot be.
  if (cond.shape == out.shape && (x.shape == out.shape || x.numel() == 1) && (y.shape == out.shape || y.numel() == 1)) {
    const bool x_full = x.shape == out.shape, y_full = y.shape == out.shape;
    parallel_for(out.numel(), kElementwiseGrain, [&](std::int64_t lo, std::int64_t hi) {
      if (x_full && y_full) {
        for (std::int64_t i = lo; i < hi; ++i) po[i] = fn(pc[i], px[i], py[i]);
      } else if (x_full) {
        const T vy = py[0];
        for (std::int64_t i = lo; i < hi; ++i) po[i] = fn(pc[i], px[i], vy);
      } else if (y_full) {
        const T vx = px[0];
        for (std::int64_t i = lo; i < hi; ++i) po[i] = fn(pc[i], vx, py[i]);
      } else {
        const T vx = px[0], vy = py[0];
        for (std::int64_t i = lo; i < hi; ++i) po[i] = fn(pc[i], vx, vy);
      }
    });
    return;
  }
  BroadcastIndexer ix(out.shape, {cond.shape, x.shape, y.shape});
  const std::int64_t len = ix.run_length();
  const std::int64_t sc = ix.inner_stride(0), sx = ix.inner_stride(1), sy = ix.inner_stride(2);
  parallel_for(ix.runs(), std::max<std::int64_t>(1, kElementwiseGrain / len), [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t run = lo; run < hi; ++run) {
      auto base = ix.input_offsets(run);
      T* ro = po + run * len;
      for (std::int64_t k = 0; k < len; ++k) {
        ro[k] = fn(pc[base[0] + k * sc], px[base[1] + k * sx], py[base[2] + k * sy]);
      }
    }
  });
}

}  // namespace kestrel::kernels
