// Test support for the optimizer tests: small variables and gradients, and value checks.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "framework/core/variable.h"

namespace kestrel::optimizers::testing {

inline Variable make_variable(const std::string& name, const std::vector<float>& values) {
  return Variable(name, Tensor::from_vector(values, {static_cast<std::int64_t>(values.size())}));
}

inline Tensor gradient(const std::vector<double>& values) {
  std::vector<float> f(values.begin(), values.end());
  return Tensor::from_vector(f, {static_cast<std::int64_t>(f.size())});
}

inline void expect_values(const Variable& v, const std::vector<double>& want) {
  std::vector<float> got = v.value().to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-6 + 1e-5 * std::abs(want[i])) << v.name() << " element " << i;
  }
}

}  // namespace kestrel::optimizers::testing
