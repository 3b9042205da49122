// 2-D convolution and pooling, NHWC, with Keras's filter layout [kh, kw, in, out].
//
//   ops::conv2d(images, filter, {.strides = {1, 1}, .padding = ops::Padding::same});
//   ops::max_pool2d(x, {.pool_size = {2, 2}});          // strides default to pool_size
//   ops::avg_pool2d(x, {.pool_size = {3, 3}, .strides = {1, 1}, .padding = ops::Padding::same});
//
// The backprop ops are the gradients of conv2d and pooling. They are ops in their own right
// (with their own gradients), so a gradient can be differentiated again.
#pragma once

#include <array>

#include "framework/core/tensor.h"

namespace kestrel::ops {

enum class Padding { valid, same };

struct Conv2DOptions {
  std::array<int, 2> strides{1, 1};
  Padding padding = Padding::valid;
};

/// input [N,H,W,C] x filter [kh,kw,C,O] -> [N,H',W',O].
Tensor conv2d(const Tensor& input, const Tensor& filter, const Conv2DOptions& options = {});
/// Gradient of conv2d with respect to its input: dy [N,H',W',O], filter -> [N,H,W,C] = input_shape.
Tensor conv2d_backprop_input(const Tensor& dy, const Tensor& filter, const Shape& input_shape,
                             const Conv2DOptions& options = {});
/// Gradient of conv2d with respect to its filter: input, dy -> filter_shape.
Tensor conv2d_backprop_filter(const Tensor& input, const Tensor& dy, const Shape& filter_shape,
                              const Conv2DOptions& options = {});

struct Pool2DOptions {
  std::array<int, 2> pool_size{2, 2};
  std::array<int, 2> strides{0, 0};  ///< {0, 0}: equal to pool_size, as in Keras
  Padding padding = Padding::valid;
};

Tensor max_pool2d(const Tensor& input, const Pool2DOptions& options = {});
/// Average over each window; with same padding only real (unpadded) elements count, as in Keras.
Tensor avg_pool2d(const Tensor& input, const Pool2DOptions& options = {});

/// Gradient of max_pool2d: routes each dy element to its window's maximum in input (first one on ties).
Tensor max_pool2d_backprop(const Tensor& input, const Tensor& dy, const Pool2DOptions& options = {});
/// Transpose of max_pool2d_backprop in dy: picks, per window, the element of `values`
/// (shaped like input) at input's maximum. Shaped like max_pool2d's output.
Tensor max_pool2d_select(const Tensor& input, const Tensor& values, const Pool2DOptions& options = {});
/// Gradient of avg_pool2d: spreads each dy element evenly over its window's real elements.
Tensor avg_pool2d_backprop(const Tensor& dy, const Shape& input_shape, const Pool2DOptions& options = {});

}  // namespace kestrel::ops
