// ConstantFolding ("constant_folding"): runs, at compile time, each op whose inputs are all
// constants, and puts its result in the program as a constant.
//
//   jit::ConstantFolding folding;
//   folding.run(graph);   // mean's 1/n scale, transposed captured weights: computed once, not per step
//
// A result is folded only when it is small or no bigger than the constants it is made from, so
// folding never bloats the program (broadcast_to of a scalar to [4096,4096] stays an op). Ops
// that depend on a graph input are never folded. The constants left unused are for DCE to drop.
#pragma once

#include <cstddef>
#include <string>

#include "framework/jit/pass.h"

namespace kestrel::jit {

class ConstantFolding final : public Pass {
 public:
  /// Results up to this size are always folded; larger ones only when no bigger than their inputs.
  static constexpr std::size_t kMaxGrowthBytes = 64 * 1024;

  std::string name() const override { return "constant_folding"; }
  /// Replaces constant-only ops by their values; true when any were folded.
  bool run(Graph& graph) override;
};

}  // namespace kestrel::jit
