// NHWC convolution and its filter gradient on oneDNN's direct convolution primitives, with Keras's
// filter layout [kh, kw, in, out] (primitives/conv.cpp decides when these beat im2col + gemm; the
// input gradient never did).
//
//   const kernels::ConvShape s = {.batch = 128, .in_h = 28, .in_w = 28, .in_c = 1, .k_h = 3, .k_w = 3,
//                                 .out_c = 32, .out_h = 26, .out_w = 26};
//   kernels::convolution_forward(s, x, w, y);
//
// The images are split into runs over kestrel::parallel_for, one oneDNN call each on its thread;
// the runs depend on the shape and kestrel::num_threads() only, so results are bitwise
// reproducible for one CPU, ISA level and thread count. Primitives are cached (primitive_cache.h).
//
// bfloat16 images, filters and outputs: oneDNN convolves them itself with AVX-512; below, where
// oneDNN 2.6 has only a slow reference kernel, each run widens a few images at a time for the
// float32 primitive and rounds its outputs. Filter gradients sum in float32 and round once.
#pragma once

#include <cstdint>

#include "framework/core/dtype.h"

namespace kestrel::kernels {

/// Every size of one convolution; the padding after the last row and column follows from them.
struct ConvShape {
  std::int64_t batch = 0, in_h = 0, in_w = 0, in_c = 0;
  std::int64_t k_h = 0, k_w = 0, out_c = 0;
  std::int64_t out_h = 0, out_w = 0;
  std::int64_t pad_top = 0, pad_left = 0;
  std::int64_t stride_h = 1, stride_w = 1;
};

/// y [batch, out_h, out_w, out_c] = x [batch, in_h, in_w, in_c] convolved with w [k_h, k_w, in_c, out_c].
void convolution_forward(const ConvShape& s, const float* x, const float* w, float* y);
void convolution_forward(const ConvShape& s, const bfloat16* x, const bfloat16* w, bfloat16* y);

/// dw [k_h, k_w, in_c, out_c], the filter's gradient from x and dy [batch, out_h, out_w, out_c]: each
/// run of images sums into its own accumulator, and the runs are added in order.
void convolution_backward_weights(const ConvShape& s, const float* x, const float* dy, float* dw);
void convolution_backward_weights(const ConvShape& s, const bfloat16* x, const bfloat16* dy, bfloat16* dw);

}  // namespace kestrel::kernels
