// Tensors written out in a test, and their values checked against numbers worked out by hand:
//
//   Tensor y = floats({0, 1, 1, 0}, {2, 2});
//   Tensor ids = int64s({101, 7592, 102});   // one axis when no shape is given
//   expect_values(loss(y_true, y), {0.5, 0.25}, kTol);
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "framework/core/tensor.h"

namespace kestrel::testing {

/// Tolerances for float32 results against values worked out in double: kTol for a few ops,
/// kLooseTol for longer chains (a softmax and its log, a mean of many terms).
inline constexpr double kTol = 1e-6;
inline constexpr double kLooseTol = 1e-5;

inline Tensor floats(const std::vector<float>& values, const Shape& shape) {
  return Tensor::from_vector<float>(values, shape);
}

inline Tensor int64s(const std::vector<std::int64_t>& values, const Shape& shape) {
  return Tensor::from_vector<std::int64_t>(values, shape);
}

inline Tensor floats(const std::vector<float>& values) {
  return floats(values, {static_cast<std::int64_t>(values.size())});
}

inline Tensor int64s(const std::vector<std::int64_t>& values) {
  return int64s(values, {static_cast<std::int64_t>(values.size())});
}

/// t's elements, in order, each within `tolerance` of want's.
inline void expect_values(const Tensor& t, const std::vector<double>& want, double tolerance) {
  const std::vector<double> got = t.to_vector<double>();
  ASSERT_EQ(got.size(), want.size()) << t.to_string();
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tolerance) << "element " << i;
}

}  // namespace kestrel::testing
