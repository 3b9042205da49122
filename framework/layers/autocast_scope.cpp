#include "framework/layers/autocast_scope.h"

#include "framework/layers/layer.h"
#include "framework/ops/elementwise.h"

namespace kestrel {

AutocastScope::AutocastScope(DType dtype) : dtype_(dtype), previous_(detail::read_cast()) {
  detail::set_read_cast(this);
}

AutocastScope::~AutocastScope() { detail::set_read_cast(previous_); }

Tensor AutocastScope::cast(const Tensor& stored) const { return ops::cast(stored, dtype_); }

CallScope::CallScope(const Layer& layer)
    : trace_scope_(layer.name(), layer.class_name()), autocast_(layer.dtype_policy().compute_dtype()) {}

Tensor CallScope::input(const Tensor& x) const {
  if (!x.defined() || !is_floating(x.dtype())) return x;
  return ops::cast(x, autocast_.dtype());
}

}  // namespace kestrel
