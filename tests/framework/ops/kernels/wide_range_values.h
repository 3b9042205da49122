// Test values whose magnitudes spread over 2^-20 to 2^20, so that float32 sums round and the
// order of the adds shows in the result: for the reductions' run-to-run and thread-count checks.
//
//   std::vector<float> x = wide_range_floats(4096, /*seed=*/7);
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace kestrel::kernels {

/// `count` normal values, each scaled by 2^e for an e uniform in [-20, 20], drawn from `seed`.
inline std::vector<float> wide_range_floats(std::int64_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-20, 20);
  std::vector<float> values(static_cast<std::size_t>(count));
  for (float& v : values) v = std::ldexp(normal(rng), exponent(rng));
  return values;
}

}  // namespace kestrel::kernels
