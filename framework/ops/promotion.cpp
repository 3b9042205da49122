#include "framework/ops/promotion.h"

#include <string>

#include "framework/core/error.h"
#include "framework/ops/elementwise.h"

namespace kestrel::detail {

std::pair<Tensor, Tensor> promote_pair(std::string_view op, const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined()) {
    throw ValueError(op_message(op, "an operand is an undefined tensor; pass a tensor with a value"));
  }
  if (a.dtype() == b.dtype()) return {a, b};
  if (is_floating(a.dtype()) && is_floating(b.dtype())) {
    // Mixed precision: compute in the wider float32, as Keras's autocasting does.
    return {ops::cast(a, DType::float32), ops::cast(b, DType::float32)};
  }
  throw TypeError(op_message(op, "a is " + a.spec().to_string() + ", b is " + b.spec().to_string() +
                                     ": dtypes differ; cast one side with ops::cast so both match"));
}

}  // namespace kestrel::detail
