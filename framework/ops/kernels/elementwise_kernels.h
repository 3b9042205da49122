// The float32 kernels of the elementwise opcodes: each op's own kernel over whole tensors, and one
// instruction of a fused program over a block. Both apply the opcode's functor
// (elementwise_functors.h), so a fused program rounds exactly as the ops it replaces.
//
//   kernels::elementwise_float32(ElementwiseOpcode::add, {a, b}, out);    // ops::add on float32
//   kernels::elementwise_step(ElementwiseOpcode::exp, {{{x}}}, y, 512);   // y[0..512) = exp(x[0..512))
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "framework/core/tensor.h"
#include "framework/ops/elementwise_opcode.h"

namespace kestrel::kernels {

/// One operand of an instruction over n elements: data[0..n), or, when data is null, value for
/// every element (a scalar, or one row-broadcast element standing for the whole run).
struct ElementwiseOperand {
  const float* data = nullptr;
  float value = 0.0f;
};

/// out = opcode(in...) over float32 tensors with NumPy broadcasting: the kernel of every op with
/// an opcode. Comparisons write bool; select reads a bool mask. Split over the thread pool.
void elementwise_float32(ElementwiseOpcode opcode, std::span<const TensorView> in, const TensorView& out);

/// y[0..n) = opcode(args...) for the opcode's arity, on one thread; comparisons write 1 or 0.
/// The fused kernel runs one per instruction and block.
void elementwise_step(ElementwiseOpcode opcode, const std::array<ElementwiseOperand, 3>& args, float* y,
                      std::int64_t n);

}  // namespace kestrel::kernels
