#include "framework/jit/passes/constant_folding.h"

#include <optional>
#include <vector>

#include "framework/core/error.h"
#include "framework/jit/rewriter.h"
#include "framework/ops/dispatch.h"

namespace kestrel::jit {
namespace {

// The op's value from its constant inputs, or nothing when folding it would not pay.
std::optional<Tensor> evaluate(const Node& node, const std::vector<Tensor>& inputs) {
  const std::size_t out_bytes = static_cast<std::size_t>(node.spec.shape.numel()) * size_of(node.spec.dtype);
  if (node.primitive->is_view()) {
    // A view shares its input's buffer, as the executor runs it: free, whatever its size.
    return Tensor::from_buffer(inputs[0].buffer(), node.spec.shape, node.spec.dtype);
  }
  std::size_t in_bytes = 0;
  for (const Tensor& t : inputs) in_bytes += t.nbytes();
  if (out_bytes > ConstantFolding::kMaxGrowthBytes && out_bytes > in_bytes) return std::nullopt;
  Tensor out = Tensor::empty(node.spec.shape, node.spec.dtype);
  try {
    detail::run_kernel(*node.primitive, inputs, out);
  } catch (const Error&) {
    // A kernel that rejects its data (a gather index out of range) must fail when the program
    // runs, as it would eagerly, not when it compiles: leave the op in place.
    return std::nullopt;
  }
  return out;
}

}  // namespace

bool ConstantFolding::run(Graph& graph) {
  GraphRewriter rewriter(graph);
  // values[id]: the value of old node id when it is a constant or was folded into one.
  std::vector<Tensor> values(static_cast<std::size_t>(graph.size()));
  bool changed = false;
  std::vector<Tensor> inputs;
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    if (node.kind == NodeKind::constant) values[static_cast<std::size_t>(id)] = node.constant;
    if (node.kind != NodeKind::op) {
      rewriter.copy(id);
      continue;
    }
    inputs.clear();
    for (ValueId in : node.inputs) {
      if (!values[static_cast<std::size_t>(in)].defined()) break;
      inputs.push_back(values[static_cast<std::size_t>(in)]);
    }
    std::optional<Tensor> folded;
    if (inputs.size() == node.inputs.size()) folded = evaluate(node, inputs);
    if (!folded) {
      rewriter.copy(id);
      continue;
    }
    values[static_cast<std::size_t>(id)] = *folded;
    rewriter.bind(id, rewriter.add_constant(*folded));
    changed = true;
  }
  if (changed) graph = rewriter.finish();
  return changed;
}

}  // namespace kestrel::jit
