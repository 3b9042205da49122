#include "framework/layers/zero_padding2d.h"

#include <utility>

#include "framework/core/error.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::layers {

std::string Padding2DArg::to_string() const {
  return "{{" + std::to_string(top()) + ", " + std::to_string(bottom()) + "}, {" + std::to_string(left()) + ", " +
         std::to_string(right()) + "}}";
}

ZeroPadding2D::ZeroPadding2D(ZeroPadding2DOptions options)
    : Layer("ZeroPadding2D", options.name, options.dtype), options_(std::move(options)) {
  const Padding2DArg& p = options_.padding;
  if (p.top() < 0 || p.bottom() < 0 || p.left() < 0 || p.right() < 0) {
    throw ValueError(error_prefix() + "padding is " + p.to_string() +
                     " ({{top, bottom}, {left, right}}); each side must be 0 or more");
  }
}

Tensor ZeroPadding2D::call(const Tensor& x, bool training) {
  if (x.rank() != 4) {
    throw ShapeError(error_prefix() + "input is " + x.shape().to_string() +
                     "; ZeroPadding2D takes images [batch, height, width, channels]" +
                     (x.rank() == 3 ? ": add the channel axis with ops::expand_dims(x, -1)" : ""));
  }
  const Padding2DArg& p = options_.padding;
  return ops::pad(x, {{0, 0}, {p.top(), p.bottom()}, {p.left(), p.right()}, {0, 0}});
}

}  // namespace kestrel::layers
