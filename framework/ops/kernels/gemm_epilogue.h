// The GEMM epilogue on one float32 row of C, for the kernels that do not take oneDNN's: the bias,
// then the activation, with Kestrel's own functors (ops::relu, ops::gelu), so the numbers are
// the ops'. A bfloat16 C gets its row widened before and rounded after (gemm.cpp's finish_rows);
// the widened bfloat16 GEMM applies it to its float32 tile before the one rounding
// (gemm_widened.cpp), so its biased product is rounded once, as oneDNN's is.
#pragma once

#include <Eigen/Core>

#include <cstdint>

#include "framework/ops/kernels/elementwise_functors.h"
#include "framework/ops/kernels/gemm.h"

namespace kestrel::kernels {

/// row[j] = activation(row[j] + bias[j]) for j in [0, n); bias may be null.
template <class Bias>
void apply_epilogue(float* row, std::int64_t n, const Bias* bias, GemmActivation activation) {
  if (bias != nullptr) {
    for (std::int64_t j = 0; j < n; ++j) row[j] += static_cast<float>(bias[j]);
  }
  Eigen::Map<Eigen::ArrayXf> x(row, n);
  switch (activation) {
    case GemmActivation::none: break;
    case GemmActivation::relu: x = ElementwiseFn<ElementwiseOpcode::relu>{}(x); break;
    case GemmActivation::gelu_erf: x = ElementwiseFn<ElementwiseOpcode::gelu>{}(x); break;
    case GemmActivation::gelu_tanh: x = ElementwiseFn<ElementwiseOpcode::gelu_tanh>{}(x); break;
  }
}

}  // namespace kestrel::kernels
