// Runs a primitive on tensors: the single path every public op takes.
//
//   Tensor out = detail::apply(std::make_shared<Exp>(), {x});
//
// apply() infers and validates the output spec, allocates it (or aliases the input for views),
// runs the kernel, and, while a GradientTape records, remembers the op for the backward pass.
#pragma once

#include <memory>
#include <vector>

#include "framework/ops/primitive.h"

namespace kestrel::detail {

Tensor apply(std::shared_ptr<const Primitive> primitive, std::vector<Tensor> inputs);

/// Runs a primitive's kernel into `out` (allocated with the inferred spec), widening bfloat16 for
/// float32-only kernels: what apply() does after inference, and what the jit's executor calls.
void run_kernel(const Primitive& p, const std::vector<Tensor>& inputs, const Tensor& out);

/// Convenience: apply(std::make_shared<P>(args...), inputs).
template <class P, class... Args>
Tensor apply_new(std::vector<Tensor> inputs, Args&&... args) {
  return ::kestrel::detail::apply(std::make_shared<const P>(std::forward<Args>(args)...), std::move(inputs));
}

}  // namespace kestrel::detail
