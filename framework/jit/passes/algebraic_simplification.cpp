#include "framework/jit/passes/algebraic_simplification.h"

#include <numeric>
#include <optional>
#include <span>
#include <vector>

#include "framework/jit/rewriter.h"

namespace kestrel::jit {
namespace {

// True when every element of t equals value; stops at the first that differs, so a large
// constant of varied values (a weight) costs little.
bool all_equal_to(const Tensor& t, double value) {
  return visit_dtype(t.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* data = t.data<T>();
    for (std::int64_t i = 0; i < t.numel(); ++i) {
      if (static_cast<double>(data[i]) != value) return false;
    }
    return true;
  });
}

// Transposes only permute axes, so with distinct dims the output shape fixes the permutation:
// the two compose to identity exactly when a probe with dims 2, 3, 4, ... comes back unchanged.
bool composes_to_identity(const Node& inner, const Node& outer) {
  const TensorSpec& in = outer.spec;
  Shape dims;
  for (int d = 0; d < in.shape.rank(); ++d) dims.push_back(d + 2);
  const TensorSpec probe{dims, in.dtype};
  const TensorSpec once = inner.primitive->infer(std::span(&probe, 1));
  const TensorSpec twice = outer.primitive->infer(std::span(&once, 1));
  return twice.shape == dims;
}

class Simplifier {
 public:
  explicit Simplifier(const Graph& graph)
      : graph_(graph),
        rewriter_(graph),
        same_as_(static_cast<std::size_t>(graph.size())),
        reshape_source_(static_cast<std::size_t>(graph.size()), -1) {
    std::iota(same_as_.begin(), same_as_.end(), ValueId{0});
  }

  bool run() {
    for (ValueId id = 0; id < graph_.size(); ++id) {
      const Node& n = graph_.node(id);
      if (n.kind == NodeKind::op && n.primitive->id() == OpId::reshape) {
        simplify_reshape(id, n);
      } else if (std::optional<ValueId> same = n.kind == NodeKind::op ? identity_of(n) : std::nullopt) {
        forward(id, *same);
      } else {
        rewriter_.copy(id);
      }
    }
    return changed_;
  }

  Graph finish() { return rewriter_.finish(); }

 private:
  // The value of input i, looking through the rewrites already made, so chains collapse in one run.
  ValueId input(const Node& n, std::size_t i) const { return same_as_[static_cast<std::size_t>(n.inputs[i])]; }
  const Node& node(ValueId id) const { return graph_.node(id); }
  bool is_op(ValueId id, OpId op) const { return graph_.is_op(id, op); }
  bool is_constant(ValueId id, double value) const {
    return node(id).kind == NodeKind::constant && all_equal_to(node(id).constant, value);
  }

  void forward(ValueId id, ValueId same) {
    same_as_[static_cast<std::size_t>(id)] = same;
    rewriter_.alias(id, same);
    changed_ = true;
  }

  // x op c or c op x with c a neutral constant; `either_side` for commutative ops. The result
  // must have x's spec: a broadcast against the constant, or a promoted dtype, is not identity.
  std::optional<ValueId> neutral_operand(const Node& n, double neutral, bool either_side) const {
    const ValueId a = input(n, 0);
    const ValueId b = input(n, 1);
    if (node(a).spec == n.spec && is_constant(b, neutral)) return a;
    if (either_side && node(b).spec == n.spec && is_constant(a, neutral)) return b;
    return std::nullopt;
  }

  // The earlier value op node n always equals, if any.
  std::optional<ValueId> identity_of(const Node& n) const {
    switch (n.primitive->id()) {
      case OpId::multiply: return neutral_operand(n, 1.0, /*either_side=*/true);
      case OpId::add: return neutral_operand(n, 0.0, /*either_side=*/true);
      case OpId::subtract: return neutral_operand(n, 0.0, /*either_side=*/false);
      case OpId::divide: return neutral_operand(n, 1.0, /*either_side=*/false);
      case OpId::negative: {
        const ValueId inner = input(n, 0);
        if (is_op(inner, OpId::negative)) return input(node(inner), 0);
        return std::nullopt;
      }
      case OpId::broadcast_to:
      case OpId::cast:
        if (node(input(n, 0)).spec == n.spec) return input(n, 0);
        return std::nullopt;
      case OpId::transpose: {
        const ValueId inner = input(n, 0);
        if (!is_op(inner, OpId::transpose)) return std::nullopt;
        const ValueId x = input(node(inner), 0);
        if (node(x).spec == n.spec && composes_to_identity(node(inner), n)) return x;
        return std::nullopt;
      }
      default: return std::nullopt;
    }
  }

  // A reshape reads through earlier reshapes to their source: the last reshape alone decides the
  // shape, so reshape(reshape(x)) becomes one reshape of x, or x itself when the shapes match.
  void simplify_reshape(ValueId id, const Node& n) {
    const ValueId direct = input(n, 0);
    const ValueId source = is_op(direct, OpId::reshape) ? reshape_source_[static_cast<std::size_t>(direct)] : direct;
    if (node(source).spec == n.spec) {
      forward(id, source);
      return;
    }
    reshape_source_[static_cast<std::size_t>(id)] = source;
    if (source == direct) {
      rewriter_.copy(id);
      return;
    }
    rewriter_.bind(id, rewriter_.add_op(n.primitive, {rewriter_.mapped(source)}, n.spec, n.name));
    changed_ = true;
  }

  const Graph& graph_;
  GraphRewriter rewriter_;
  std::vector<ValueId> same_as_;         // old id -> the old value it was found equal to (itself if none)
  std::vector<ValueId> reshape_source_;  // reshapes kept: the non-reshape value they read through
  bool changed_ = false;
};

}  // namespace

bool AlgebraicSimplification::run(Graph& graph) {
  Simplifier simplifier(graph);
  if (!simplifier.run()) return false;
  graph = simplifier.finish();
  return true;
}

}  // namespace kestrel::jit
