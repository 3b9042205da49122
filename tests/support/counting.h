// Test support: a float32 tensor holding 0, 1, 2, ... in row-major order, whose values show
// where each element of a layer's output came from.
#pragma once

#include <cstddef>
#include <vector>

#include "framework/core/tensor.h"

namespace kestrel::testing {

inline Tensor counting(const Shape& shape) {
  std::vector<float> values(static_cast<std::size_t>(shape.numel()));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  return Tensor::from_vector(values, shape);
}

}  // namespace kestrel::testing
