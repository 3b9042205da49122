#include "framework/jit/passes/cast_folding.h"

#include <vector>

#include "framework/jit/rewriter.h"
#include "framework/ops/op_list.h"

namespace kestrel::jit {
namespace {

class CastFolder {
 public:
  explicit CastFolder(const Graph& graph) : graph_(graph), readers_(graph.reader_counts()) {}

  /// Rewrites node `id` into `rewriter` when a fold applies there; false leaves it to be copied.
  bool operator()(ValueId id, GraphRewriter& rewriter) const {
    const Node& n = graph_.node(id);
    if (n.kind != NodeKind::op) return false;
    // The op itself, when reading its operands narrow leaves its result as it was.
    if (n.primitive->widens_bfloat16_exactly()) return fold(id, id, rewriter);
    // A rounding cast of such an op's float32 result, read by nothing else: the op rounds it.
    if (is_cast(id, DType::float32, DType::bfloat16)) {
      const ValueId op = n.inputs[0];
      const Node& producer = graph_.node(op);
      return producer.kind == NodeKind::op && producer.primitive->widens_bfloat16_exactly() &&
             readers_[static_cast<std::size_t>(op)] == 1 && fold(op, id, rewriter);
    }
    return false;
  }

 private:
  bool is_cast(ValueId id, DType from, DType to) const {
    const Node& n = graph_.node(id);
    return graph_.is_op(id, OpId::cast) && n.spec.dtype == to && graph_.node(n.inputs[0]).spec.dtype == from;
  }

  // Op `op` reading the bfloat16 values its widening casts read, bound to `result` (op itself, or
  // the cast after it) when it then gives result's spec.
  bool fold(ValueId op, ValueId result, GraphRewriter& rewriter) const {
    const Node& n = graph_.node(op);
    std::vector<ValueId> inputs;
    std::vector<TensorSpec> specs;
    bool narrowed = false;
    for (ValueId in : n.inputs) {
      const bool widened = is_cast(in, DType::bfloat16, DType::float32);
      const ValueId source = widened ? graph_.node(in).inputs[0] : in;
      narrowed |= widened;
      inputs.push_back(rewriter.mapped(source));
      specs.push_back(graph_.node(source).spec);
    }
    if (!narrowed || n.primitive->infer(specs) != graph_.node(result).spec) return false;
    // The casts stay as copied, now unread when nothing else reads them, for the DCE that follows.
    rewriter.bind(result, rewriter.add_op(n.primitive, std::move(inputs), graph_.node(result).spec, n.name));
    return true;
  }

  const Graph& graph_;
  std::vector<int> readers_;
};

}  // namespace

bool CastFolding::run(Graph& graph) {
  const CastFolder fold(graph);
  return rewrite_nodes(graph, [&](ValueId id, GraphRewriter& rewriter) { return fold(id, rewriter); });
}

}  // namespace kestrel::jit
