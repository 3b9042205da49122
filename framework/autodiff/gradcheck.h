// gradcheck: compares autodiff gradients with central finite differences, so users can test
// the gradients of their own layers and ops.
//
//   auto f = [&](const std::vector<Tensor>& a) { return my_layer(a[0]); };
//   GradcheckResult r = gradcheck(f, {random::normal({3, 4}, random::Key(0))});
//   EXPECT_TRUE(r.ok) << r.report;
//
// f may return any shape: gradcheck differentiates the scalar sum(f(x) * r) for a fixed random
// r, which checks the whole Jacobian against one random direction per output. The function is
// evaluated in float32 and the differences are accumulated in float64.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "framework/autodiff/value_and_grad.h"

namespace kestrel {

struct GradcheckOptions {
  double eps = 1e-3;   ///< finite-difference step
  double atol = 2e-3;  ///< absolute tolerance
  double rtol = 2e-2;  ///< relative tolerance
  std::uint64_t seed = 0;
};

struct GradcheckResult {
  bool ok = true;
  double max_abs_error = 0;
  std::string report;  ///< the worst element: input, index, analytic and numeric values
};

/// Checks d f / d inputs[i] for every float32 input (integer inputs are held fixed).
/// Throws TypeError for bfloat16 inputs: their 8-bit mantissa is too coarse for differences.
GradcheckResult gradcheck(const TensorFunction& f, const std::vector<Tensor>& inputs, GradcheckOptions options = {});

}  // namespace kestrel
