// The reverse pass shared by GradientTape and value_and_grad.
#pragma once

#include <vector>

#include "framework/core/tensor.h"

namespace kestrel::autodiff::detail {

/// Gradients of `target` (seeded with `seed`, same shape as target) with respect to each source.
/// A source the target does not depend on gets zeros of its shape.
std::vector<Tensor> backward(const Tensor& target, const Tensor& seed, const std::vector<Tensor>& sources);

}  // namespace kestrel::autodiff::detail
