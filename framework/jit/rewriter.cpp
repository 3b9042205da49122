#include "framework/jit/rewriter.h"

#include "framework/core/error.h"

namespace kestrel::jit {

GraphRewriter::GraphRewriter(const Graph& old) : old_(old), map_(static_cast<std::size_t>(old.size()), -1) {}

ValueId GraphRewriter::mapped(ValueId id) const {
  const ValueId out = map_[static_cast<std::size_t>(id)];
  if (out < 0) throw JitError("graph rewrite: %" + std::to_string(id) + " is used before it was copied or replaced");
  return out;
}

ValueId GraphRewriter::copy(ValueId id) {
  const Node& node = old_.node(id);
  ValueId out = -1;
  switch (node.kind) {
    case NodeKind::input: out = graph_.add_input(node.spec, node.name); break;
    case NodeKind::constant: out = graph_.add_constant(node.constant); break;
    case NodeKind::op: {
      std::vector<ValueId> inputs;
      inputs.reserve(node.inputs.size());
      for (ValueId in : node.inputs) inputs.push_back(mapped(in));
      out = graph_.add_op(node.primitive, std::move(inputs), node.spec, node.name);
      break;
    }
  }
  map_[static_cast<std::size_t>(id)] = out;
  return out;
}

void GraphRewriter::alias(ValueId id, ValueId replacement) { map_[static_cast<std::size_t>(id)] = mapped(replacement); }

void GraphRewriter::bind(ValueId id, ValueId new_id) { map_[static_cast<std::size_t>(id)] = new_id; }

Graph GraphRewriter::finish() {
  // Inputs keep their order and all stay, even unused: callers pass every input by position.
  for (ValueId in : old_.inputs()) {
    if (map_[static_cast<std::size_t>(in)] < 0)
      throw JitError("graph rewrite: input %" + std::to_string(in) + " was dropped");
  }
  for (ValueId out : old_.outputs()) graph_.add_output(mapped(out));
  // Outputs keep their positions and inputs theirs, so each alias still pairs the same two.
  for (std::size_t k = 0; k < old_.outputs().size(); ++k) {
    if (const std::optional<std::size_t> input = old_.output_alias(k)) graph_.alias_output(k, *input);
  }
  return std::move(graph_);
}

bool rewrite_nodes(Graph& graph, const std::function<bool(ValueId id, GraphRewriter& rewriter)>& rewrite) {
  GraphRewriter rewriter(graph);
  bool changed = false;
  for (ValueId id = 0; id < graph.size(); ++id) {
    if (rewrite(id, rewriter)) {
      changed = true;
    } else {
      rewriter.copy(id);
    }
  }
  if (changed) graph = rewriter.finish();
  return changed;
}

}  // namespace kestrel::jit
