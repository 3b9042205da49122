#include "framework/jit/passes/matmul_scale_folding.h"

#include <cmath>
#include <optional>
#include <vector>

#include "framework/core/dtype.h"
#include "framework/jit/rewriter.h"
#include "framework/ops/matmul.h"

namespace kestrel::jit {
namespace {

// True for a finite power of two (positive or negative), whose products are exact.
bool is_power_of_two(float value) {
  int exponent = 0;
  return std::isfinite(value) && std::abs(std::frexp(value, &exponent)) == 0.5f;
}

// The value of a one-element tensor, in float.
float only_value(const Tensor& t) {
  return visit_dtype(t.dtype(), [&](auto zero) { return static_cast<float>(t.data<decltype(zero)>()[0]); });
}

class ScaleFolding {
 public:
  explicit ScaleFolding(const Graph& graph) : graph_(graph), readers_(at(graph.size())), scaling_(at(graph.size())) {
    for (ValueId id = 0; id < graph.size(); ++id) {
      for (ValueId in : node(id).inputs) readers_[at(in)].push_back(id);
      scaling_[at(id)] = scaling(id);
    }
    for (ValueId out : graph.outputs()) readers_[at(out)].push_back(kGraphOutput);
  }

  /// Rewrites node `id` into `rewriter` when a scale folds there; false leaves it to be copied.
  bool operator()(ValueId id, GraphRewriter& rewriter) const {
    if (const std::optional<Scaling>& s = scaling_[at(id)]; s && takes_scale(s->operand) && read_once(s->operand)) {
      // The product read by nothing else takes the factor; it stays as copied, now unread.
      rewriter.bind(id, add_scaled(s->operand, s->factor, rewriter));
      return true;
    }
    if (takes_scale(id) && reads_folded_operand(id)) {
      rewriter.bind(id, add_scaled(id, 1.0f, rewriter));
      return true;
    }
    return false;
  }

 private:
  // A multiply of `operand` by a scalar constant power of two, `factor`.
  struct Scaling {
    ValueId operand;
    float factor;
  };
  static constexpr ValueId kGraphOutput = -1;

  static std::size_t at(ValueId id) { return static_cast<std::size_t>(id); }
  const Node& node(ValueId id) const { return graph_.node(id); }
  bool read_once(ValueId id) const { return readers_[at(id)].size() == 1; }

  // Node `id` as a multiply by a scalar constant power of two that keeps its operand's spec.
  std::optional<Scaling> scaling(ValueId id) const {
    if (!graph_.is_op(id, OpId::multiply)) return std::nullopt;
    const Node& n = node(id);
    for (std::size_t side = 0; side < 2; ++side) {
      const Node& constant = node(n.inputs[1 - side]);
      if (constant.kind == NodeKind::constant && constant.spec.shape.numel() == 1 &&
          constant.spec.dtype == n.spec.dtype && node(n.inputs[side]).spec == n.spec) {
        const float factor = only_value(constant.constant);
        if (is_power_of_two(factor)) return Scaling{n.inputs[side], factor};
      }
    }
    return std::nullopt;
  }

  // A plain matmul without a bias operand: one that can take an alpha.
  bool takes_scale(ValueId id) const {
    return graph_.is_op(id, OpId::matmul) && node(id).inputs.size() == 2 &&
           detail::is_plain_matmul(*node(id).primitive);
  }

  // A scaling multiply every reader of which is such a matmul, reading it as an operand.
  bool folds_into_readers(ValueId id) const {
    if (!scaling_[at(id)]) return false;
    for (ValueId reader : readers_[at(id)]) {
      if (reader == kGraphOutput || !takes_scale(reader)) return false;
    }
    return true;
  }

  bool reads_folded_operand(ValueId matmul) const {
    for (ValueId in : node(matmul).inputs) {
      if (folds_into_readers(in)) return true;
    }
    return false;
  }

  // Matmul `id` times `factor`, reading past every operand that folds into its readers (and
  // taking its factor too).
  ValueId add_scaled(ValueId id, float factor, GraphRewriter& rewriter) const {
    const Node& matmul = node(id);
    std::vector<ValueId> inputs;
    for (ValueId in : matmul.inputs) {
      if (folds_into_readers(in)) {
        factor *= scaling_[at(in)]->factor;
        in = scaling_[at(in)]->operand;
      }
      inputs.push_back(rewriter.mapped(in));
    }
    return rewriter.add_op(detail::matmul_scaled_by(*matmul.primitive, factor), std::move(inputs), matmul.spec,
                           matmul.name);
  }

  const Graph& graph_;
  std::vector<std::vector<ValueId>> readers_;    // by id: the nodes reading it, kGraphOutput for an output
  std::vector<std::optional<Scaling>> scaling_;  // by id: set for a scaling multiply
};

}  // namespace

bool MatmulScaleFolding::run(Graph& graph) {
  const ScaleFolding fold(graph);
  return rewrite_nodes(graph, [&](ValueId id, GraphRewriter& rewriter) { return fold(id, rewriter); });
}

}  // namespace kestrel::jit
