#include "framework/jit/passes/common_subexpression_elimination.h"

#include <cstring>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "framework/jit/rewriter.h"

namespace kestrel::jit {
namespace {

// A value already in the new graph that later duplicates can be replaced by.
struct Kept {
  ValueId old_id;               // its node in the old graph (primitive, spec, constant)
  std::vector<ValueId> inputs;  // its inputs, as new-graph ids
};

std::size_t combine(std::size_t seed, std::size_t value) {
  detail::hash_combine(seed, value);
  return seed;
}

std::size_t spec_hash(const TensorSpec& spec) {
  return combine(hash_value(spec.shape), static_cast<std::size_t>(spec.dtype));
}

bool small(const Tensor& t) { return t.nbytes() <= CommonSubexpressionElimination::kMaxComparedBytes; }

// Small constants hash their bytes; large ones their buffer, since only a shared buffer merges them.
std::size_t constant_hash(const Tensor& t) {
  if (!small(t)) return combine(spec_hash(t.spec()), std::hash<const void*>{}(t.raw_data()));
  const std::string_view bytes(static_cast<const char*>(t.raw_data()), t.nbytes());
  return combine(spec_hash(t.spec()), std::hash<std::string_view>{}(bytes));
}

bool same_constant(const Tensor& a, const Tensor& b) {
  if (a.spec() != b.spec()) return false;
  if (a.raw_data() == b.raw_data()) return true;
  // Bytes, not values: 0.0 and -0.0 stay apart, and two NaNs with the same bits merge.
  return small(a) && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

}  // namespace

bool CommonSubexpressionElimination::run(Graph& graph) {
  GraphRewriter rewriter(graph);
  std::unordered_multimap<std::size_t, Kept> seen;
  bool changed = false;
  std::vector<ValueId> inputs;
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    if (node.kind == NodeKind::input) {
      rewriter.copy(id);
      continue;
    }
    // Inputs are looked up by their new ids, so a merge upstream lets the users merge as well.
    inputs.clear();
    for (ValueId in : node.inputs) inputs.push_back(rewriter.mapped(in));
    std::size_t key = 0;
    if (node.kind == NodeKind::constant) {
      key = constant_hash(node.constant);
    } else {
      key = combine(node.primitive->hash(), spec_hash(node.spec));
      for (ValueId in : inputs) key = combine(key, std::hash<ValueId>{}(in));
    }
    auto [begin, end] = seen.equal_range(key);
    const Kept* match = nullptr;
    for (auto it = begin; it != end && match == nullptr; ++it) {
      const Node& other = graph.node(it->second.old_id);
      if (other.kind != node.kind || other.spec != node.spec) continue;
      const bool same = node.kind == NodeKind::constant
                            ? same_constant(node.constant, other.constant)
                            : it->second.inputs == inputs && node.primitive->equivalent(*other.primitive);
      if (same) match = &it->second;
    }
    if (match != nullptr) {
      rewriter.alias(id, match->old_id);
      changed = true;
      continue;
    }
    rewriter.copy(id);
    seen.emplace(key, Kept{id, inputs});
  }
  if (changed) graph = rewriter.finish();
  return changed;
}

}  // namespace kestrel::jit
