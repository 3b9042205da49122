// The GEMM epilogue on float32 rows of C, for the products that do not take oneDNN's: the bias,
// the residual, then the activation through the kernel of the op itself (ops::relu's, ops::gelu's) at the CPU's
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

/// What the epilogue adds before the activation: a bias [n] and a residual of rows `ld` apart,
/// either null.
template <class Addend>
struct EpilogueAddends {
  const Addend* bias = nullptr;
  const Addend* residual = nullptr;
  std::int64_t residual_ld = 0;
};

/// rows[i][j] = activation((rows[i][j] + bias[j]) + residual[i][j]) for the `m` rows of `n`
/// floats, `ld` apart: each sum rounded as the ops' separate adds round it, both adds on a row
/// while it is in L1. Rows that lie end to end take the activation in one call.
template <class Addend>
void apply_epilogue(float* rows, std::int64_t m, std::int64_t n, std::int64_t ld, const EpilogueAddends<Addend>& add,
                    GemmActivation activation) {
  if (add.bias != nullptr || add.residual != nullptr) {
    for (std::int64_t i = 0; i < m; ++i) {
      float* row = rows + i * ld;
      if (add.bias != nullptr) {
        for (std::int64_t j = 0; j < n; ++j) row[j] += static_cast<float>(add.bias[j]);
      }
      if (add.residual != nullptr) {
        const Addend* residual = add.residual + i * add.residual_ld;
        for (std::int64_t j = 0; j < n; ++j) row[j] += static_cast<float>(residual[j]);
      }
    }
  }
  if (ld == n) {
    apply_activation(rows, m * n, activation);
    return;
  }
  for (std::int64_t i = 0; i < m; ++i) apply_activation(rows + i * ld, n, activation);
}

}  // namespace kestrel::kernels
