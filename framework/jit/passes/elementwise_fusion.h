// ElementwiseFusion ("elementwise_fusion"): turns each connected region of elementwise ops into
// one fused_elementwise op, which reads the region's inputs and writes its result once instead of
// making one pass over memory (and one intermediate tensor) per op.
//
//   jit::ElementwiseFusion fusion;
//   fusion.run(graph);
//   // before: %3 = matmul(%0, %1)   %4 = add(%3, %2)   %5 = relu(%4)
//   // after:  %3 = matmul(%0, %1)   %4 = fused_elementwise(%3, %2) {relu((in0 + in1))}
//
// What fuses, on float32 data (bool values of comparisons stay inside a region, as 0 and 1): every
// op whose primitive names the instruction computing it (Primitive::fusion_opcode; the ops of
// KESTREL_ELEMENTWISE_OPCODES in op_list.h: arithmetic, min/max, the unary math ops and
// activations, comparisons, where), plus cast between float32 and bool, broadcast_to, and
// fused_elementwise itself (its program is inlined).
// Each operand must be what the fused kernel reads as it is: the op's own shape, a suffix of it
// (a bias [N] against [B, N]), or rank-0. Not fused: pow (no instruction for it), bfloat16 ops
// (each rounds its result to bfloat16, which a float32 program would skip, changing results), and
// bool values entering a region from outside (the kernel reads floats).
//
// Regions grow from their last op backwards. A producer joins its consumer's region only when
// every use of it is inside the region and it is not a graph output, so every value needed
// elsewhere stays materialized. Across a fan-out, a cheap float producer (arithmetic, min and max,
// float casts; not exp, tanh, erf, roots or divisions) with at most one operand of its own size, read
// only by fusible ops in two regions or more, is computed again in each instead of written once
// and read back by each, which moves fewer bytes: `s = x * 0.5` read by `a = s + y` and
// `b = relu(s)` becomes two programs that each read x. Members have the region's shape or are rank-0
// (the kernel computes those once, not per element). A region of one op stays as it is. The fused
// op keeps the scope of the region's last op; rank-0 constants become program constants, which
// leaves them dead for the DCE after this pass.
#pragma once

#include <string>

#include "framework/jit/pass.h"

namespace kestrel::jit {

class ElementwiseFusion final : public Pass {
 public:
  std::string name() const override { return "elementwise_fusion"; }
  /// Fuses every region of two or more ops; true when any was fused.
  bool run(Graph& graph) override;
};

}  // namespace kestrel::jit
