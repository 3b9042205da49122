#include "framework/layers/flatten.h"

#include "framework/core/error.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::layers {

Flatten::Flatten(FlattenOptions options) : Layer("Flatten", options.name, options.dtype) {}

Tensor Flatten::call(const Tensor& x, bool training) {
  if (x.rank() < 1) {
    throw ShapeError("layer '" + name() + "' (Flatten): input is a scalar; Flatten needs a batch dim first");
  }
  // The size is computed from the static shape rather than with -1, which is ambiguous for a batch of 0.
  std::int64_t features = 1;
  for (int d = 1; d < x.rank(); ++d) features *= x.shape()[d];
  return ops::reshape(x, {x.shape()[0], features});
}

}  // namespace kestrel::layers
