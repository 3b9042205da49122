// GraphRewriter: builds a new graph from an old one node by node, the way every pass rewrites —
// copy a node, drop it, or replace its value by another — with ids remapped as it goes.
//
//   GraphRewriter r(old);
//   for (ValueId id = 0; id < old.size(); ++id) {
//     if (is_dead[id]) continue;                       // dropped: nothing may use it
//     if (auto same = duplicate_of(id)) { r.alias(id, *same); continue; }   // uses now see *same
//     r.copy(id);
//   }
//   Graph rewritten = r.finish();                      // outputs remapped too, aliases kept
#pragma once

#include <functional>
#include <vector>

#include "framework/jit/graph.h"

namespace kestrel::jit {

class GraphRewriter {
 public:
  explicit GraphRewriter(const Graph& old);

  /// Copies old node `id` (its inputs remapped); returns its new id.
  ValueId copy(ValueId id);
  /// Old value `id` is from now on the old value `replacement` (already copied or aliased).
  void alias(ValueId id, ValueId replacement);
  /// Old value `id` is from now on the new value `new_id` (a node added with add_*).
  void bind(ValueId id, ValueId new_id);
  /// The new id of an old value (copied, aliased or bound before).
  ValueId mapped(ValueId id) const;

  /// Adds new nodes directly (ids are new-graph ids).
  ValueId add_constant(const Tensor& value) { return graph_.add_constant(value); }
  ValueId add_op(std::shared_ptr<const Primitive> primitive, std::vector<ValueId> new_inputs, const TensorSpec& spec,
                 std::string scope) {
    return graph_.add_op(std::move(primitive), std::move(new_inputs), spec, std::move(scope));
  }

  /// The new graph, with the old outputs remapped (in order) and their aliases kept.
  Graph finish();

 private:
  const Graph& old_;
  Graph graph_;
  std::vector<ValueId> map_;  // old id -> new id, -1 while unmapped
};

/// The pattern passes' walk: every node of `graph` in order goes to `rewrite`, which either adds
/// its replacement (binding the node's id) and returns true, or returns false, and the node is
/// copied as it is. Nodes a replacement makes unread stay for a DCE to drop. Replaces `graph`
/// with the result and returns true when any node was rewritten.
bool rewrite_nodes(Graph& graph, const std::function<bool(ValueId id, GraphRewriter& rewriter)>& rewrite);

}  // namespace kestrel::jit
