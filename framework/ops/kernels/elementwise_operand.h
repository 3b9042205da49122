// One operand of an elementwise instruction over a run of elements, as the per-level kernel
// kernels::cpu().elementwise_step reads it (internal).
#pragma once

namespace kestrel::kernels {

/// data[0..n), or, when data is null, value for every element (a scalar, or one row-broadcast
/// element standing for the whole run).
struct ElementwiseOperand {
  const float* data = nullptr;
  float value = 0.0f;
};

}  // namespace kestrel::kernels
