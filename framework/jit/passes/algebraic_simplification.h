// AlgebraicSimplification ("algebraic_simplification"): removes ops that provably return their
// input unchanged.
//
//   jit::AlgebraicSimplification simplify;
//   simplify.run(graph);   // x * 1 -> x, -(-x) -> x, reshape(reshape(x)) -> one reshape
//
// The rewrites, with a constant recognised by value (rank 0, or every element equal):
//   x * 1, 1 * x, x + 0, 0 + x, x - 0, x / 1        -> x   (only when the result's spec is x's:
//                                                            x * ones([4,3]) with x [3] broadcasts)
//   negative(negative(x))                            -> x
//   reshape(reshape(x))                              -> reshape(x)
//   reshape, broadcast_to or cast to x's own spec    -> x
//   transpose(transpose(x)) composing to identity    -> x
// Only identities that hold for every float32 value qualify: x * 0 -> 0 does not (NaN * 0 is
// NaN, inf * 0 is NaN), and reassociation changes rounding. One caveat, accepted on purpose:
// x + 0 -> x keeps a -0.0 input negative, where the op would have made it +0.0 (equal values).
#pragma once

#include <string>

#include "framework/jit/pass.h"

namespace kestrel::jit {

class AlgebraicSimplification final : public Pass {
 public:
  std::string name() const override { return "algebraic_simplification"; }
  /// Applies the rewrites above; true when any applied. Leaves dead ops for DCE.
  bool run(Graph& graph) override;
};

}  // namespace kestrel::jit
