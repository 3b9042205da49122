// Functional differentiation, as jax.value_and_grad.
//
//   auto f = [](const std::vector<Tensor>& a) { return ops::sum(ops::multiply(a[0], a[1])); };
//   auto [value, grads] = value_and_grad(f, {x, y});   // grads[0] == y, grads[1] == x
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "framework/core/tensor.h"

namespace kestrel {

using TensorFunction = std::function<Tensor(const std::vector<Tensor>&)>;

/// f(args) and d f / d args[i] for every floating argument (undefined for integer arguments).
/// f must return a scalar, or pass output_gradient of f's output shape.
std::pair<Tensor, std::vector<Tensor>> value_and_grad(const TensorFunction& f, const std::vector<Tensor>& args,
                                                      const Tensor& output_gradient = Tensor());

/// Only the gradients.
std::vector<Tensor> grad(const TensorFunction& f, const std::vector<Tensor>& args);

}  // namespace kestrel
