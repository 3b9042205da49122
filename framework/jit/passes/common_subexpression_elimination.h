// CommonSubexpressionElimination ("cse"): computes each distinct value once.
//
//   jit::CommonSubexpressionElimination cse;
//   cse.run(graph);   // two exp(%0) become one; their users share it
//
// Two ops merge when their primitives are equivalent (same op, same parameters) and they read the
// same values. Two constants merge when they hold the same spec and bytes: every `x + 1.0` in a
// traced step captures its own scalar, and merging them lets the ops that use them merge too.
// Inputs never merge: each is a separate argument of the program.
#pragma once

#include <cstddef>
#include <string>

#include "framework/jit/pass.h"

namespace kestrel::jit {

class CommonSubexpressionElimination final : public Pass {
 public:
  /// Constants up to this size are compared byte by byte; larger ones merge only when they share
  /// their buffer, so compiling never scans big weights.
  static constexpr std::size_t kMaxComparedBytes = 4096;

  std::string name() const override { return "cse"; }
  /// Merges duplicate ops and constants; true when any were merged.
  bool run(Graph& graph) override;
};

}  // namespace kestrel::jit
