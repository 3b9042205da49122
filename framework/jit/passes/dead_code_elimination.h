// DeadCodeElimination ("dce"): drops every op and constant that no output depends on.
//
//   jit::DeadCodeElimination dce;
//   bool changed = dce.run(graph);   // graph now holds only what its outputs need
//
// Inputs always stay, used or not: a compiled program takes its inputs by position.
#pragma once

#include <string>

#include "framework/jit/pass.h"

namespace kestrel::jit {

class DeadCodeElimination final : public Pass {
 public:
  std::string name() const override { return "dce"; }
  /// Removes the values no output reaches; true when any were removed.
  bool run(Graph& graph) override;
};

}  // namespace kestrel::jit
