// dtype promotion for ops with several operands (internal).
#pragma once

#include <string_view>
#include <utility>

#include "framework/core/tensor.h"

namespace kestrel::detail {

/// Equal dtypes pass through; float32 with bfloat16 computes in float32 (the bfloat16 side is cast);
/// any other mix throws TypeError naming the op and both operands, suggesting ops::cast.
std::pair<Tensor, Tensor> promote_pair(std::string_view op, const Tensor& a, const Tensor& b);

}  // namespace kestrel::detail
