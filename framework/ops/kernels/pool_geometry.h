// The geometry of a 2-D pooling window over NHWC images (internal): what the pooling kernels
// (framework/ops/kernels/cpu/pool.cpp) need to know, resolved and checked by the ops
// (framework/ops/primitives/pool.cpp). Windows follow TensorFlow's padding rules.
#pragma once

#include <cstdint>

#include "framework/core/shape.h"

namespace kestrel::kernels {

struct PoolGeometry {
  std::int64_t batch, in_h, in_w, channels;
  std::int64_t k_h, k_w;
  std::int64_t out_h, out_w;
  std::int64_t pad_top, pad_left;
  int stride_h, stride_w;

  Shape output_shape() const { return {batch, out_h, out_w, channels}; }
  std::int64_t image_size() const { return in_h * in_w * channels; }
  std::int64_t work_per_output_row() const { return out_w * k_h * k_w * channels; }
};

}  // namespace kestrel::kernels
