// Sliding-window geometry shared by convolution and pooling (internal), with TensorFlow's
// padding rules, so that conv2d and the pools agree on every output size.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "framework/ops/conv.h"

namespace kestrel::kernels {

inline std::string padding_name(ops::Padding p) { return p == ops::Padding::same ? "same" : "valid"; }

/// Output positions along one axis: ceil(in / stride) with same padding, else the windows that fit.
inline std::int64_t output_extent(std::int64_t in, std::int64_t window, int stride, ops::Padding padding) {
  return padding == ops::Padding::same ? (in + stride - 1) / stride : (in - window) / stride + 1;
}

/// Padding before the first element: half of what the last window needs, the odd element going after.
inline std::int64_t pad_before(std::int64_t in, std::int64_t out, std::int64_t window, int stride) {
  return std::max<std::int64_t>((out - 1) * stride + window - in, 0) / 2;
}

}  // namespace kestrel::kernels
