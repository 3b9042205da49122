// The GEMM epilogue on float32 rows of C, for the products that do not take oneDNN's: the bias,
// then the activation through the kernel of the op itself (ops::relu's, ops::gelu's) at the CPU's
// level, so the numbers are the ops' and run at the ops' speed. A bfloat16 C gets its row widened
// before and rounded after (gemm.cpp's finish_rows); the widened bfloat16 GEMM applies it to its
// float32 tile before the one rounding (gemm_widened.cpp), so its biased product is rounded once,
// as oneDNN's is.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "framework/core/error.h"
#include "framework/core/tensor.h"
#include "framework/ops/kernels/cpu_kernels.h"
#include "framework/ops/kernels/gemm.h"

namespace kestrel::kernels {

/// The elementwise opcode of an activation other than none.
inline ElementwiseOpcode activation_opcode(GemmActivation activation) {
  switch (activation) {
    case GemmActivation::relu: return ElementwiseOpcode::relu;
    case GemmActivation::gelu_erf: return ElementwiseOpcode::gelu;
    case GemmActivation::gelu_tanh: return ElementwiseOpcode::gelu_tanh;
    case GemmActivation::none: break;
  }
  throw Error("gemm: activation " + std::to_string(static_cast<int>(activation)) + " has no elementwise opcode");
}

/// The activation, in place, on `n` contiguous floats.
inline void apply_activation(float* values, std::int64_t n, GemmActivation activation) {
  if (activation == GemmActivation::none || n <= 0) return;
  const TensorView view{values, Shape{n}, DType::float32};
  cpu().elementwise_float32(activation_opcode(activation), std::span(&view, 1), view);
}

/// rows[i][j] = activation(rows[i][j] + bias[j]) for the `m` rows of `n` floats, `ld` apart; bias
/// may be null. Rows that lie end to end take the activation in one call.
template <class Bias>
void apply_epilogue(float* rows, std::int64_t m, std::int64_t n, std::int64_t ld, const Bias* bias,
                    GemmActivation activation) {
  if (bias != nullptr) {
    for (std::int64_t i = 0; i < m; ++i) {
      float* row = rows + i * ld;
      for (std::int64_t j = 0; j < n; ++j) row[j] += static_cast<float>(bias[j]);
    }
  }
  if (ld == n) {
    apply_activation(rows, m * n, activation);
    return;
  }
  for (std::int64_t i = 0; i < m; ++i) apply_activation(rows + i * ld, n, activation);
}

}  // namespace kestrel::kernels
