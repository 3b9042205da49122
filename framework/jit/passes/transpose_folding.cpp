#include "framework/jit/passes/transpose_folding.h"

#include <optional>
#include <vector>

#include "framework/jit/rewriter.h"
#include "framework/ops/matmul.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::jit {
namespace {

class TransposeFolder {
 public:
  explicit TransposeFolder(const Graph& graph) : graph_(graph), readers_(graph.reader_counts()) {}

  /// Rewrites node `id` into `rewriter` when a transpose folds there; false leaves it to be copied.
  bool operator()(ValueId id, GraphRewriter& rewriter) const {
    if (swaps_heads(id)) return fold_into_product(id, rewriter);
    if (graph_.is_op(id, OpId::matmul)) return fold_operands(id, rewriter);
    return false;
  }

 private:
  // A matmul's operands with the heads transposes before them folded in: what it reads, and in
  // which layout.
  struct Folded {
    std::vector<ValueId> inputs;
    detail::MatmulHeadsLayout heads;
  };

  const Node& node(ValueId id) const { return graph_.node(id); }

  // True for a transpose that exchanges axes -3 and -2 only.
  bool swaps_heads(ValueId id) const {
    if (!graph_.is_op(id, OpId::transpose)) return false;
    const std::vector<int> perm = *detail::transpose_perm(*node(id).primitive);
    const int rank = static_cast<int>(perm.size());
    if (rank < 3) return false;
    for (int axis = 0; axis < rank; ++axis) {
      const int kept = axis == rank - 3 ? rank - 2 : axis == rank - 2 ? rank - 3 : axis;
      if (perm[static_cast<std::size_t>(axis)] != kept) return false;
    }
    return true;
  }

  Folded folded_operands(ValueId matmul) const {
    const Node& product = node(matmul);
    Folded folded{product.inputs, *detail::matmul_heads_layout(*product.primitive)};
    bool* const sides[] = {&folded.heads.a, &folded.heads.b};  // operand k's layout
    for (std::size_t k = 0; k < 2; ++k) {
      if (!*sides[k] && swaps_heads(product.inputs[k])) {
        folded.inputs[k] = node(product.inputs[k]).inputs[0];
        *sides[k] = true;
      }
    }
    return folded;
  }

  ValueId add_matmul(ValueId matmul, const Folded& folded, const TensorSpec& spec, GraphRewriter& rewriter) const {
    std::vector<ValueId> inputs;
    for (ValueId in : folded.inputs) inputs.push_back(rewriter.mapped(in));
    return rewriter.add_op(detail::matmul_with_heads_layout(*node(matmul).primitive, folded.heads), std::move(inputs),
                           spec, node(matmul).name);
  }

  // A matmul reading a heads transpose reads past it. The transpose stays as copied, for its
  // other readers or for the DCE that follows.
  bool fold_operands(ValueId matmul, GraphRewriter& rewriter) const {
    const Folded folded = folded_operands(matmul);
    if (folded.inputs == node(matmul).inputs) return false;
    rewriter.bind(matmul, add_matmul(matmul, folded, node(matmul).spec, rewriter));
    return true;
  }

  // A heads transpose of a product read by nothing else: the product is written in the
  // transposed layout (its operands folded as well). The product's old node stays, unread.
  bool fold_into_product(ValueId transpose, GraphRewriter& rewriter) const {
    const ValueId product = node(transpose).inputs[0];
    if (!graph_.is_op(product, OpId::matmul) || readers_[static_cast<std::size_t>(product)] != 1) return false;
    // A residual is read in the product's layout: written transposed, it would be read transposed.
    if (detail::matmul_has_residual(*node(product).primitive)) return false;
    Folded folded = folded_operands(product);
    if (folded.heads.out) return false;
    folded.heads.out = true;
    rewriter.bind(transpose, add_matmul(product, folded, node(transpose).spec, rewriter));
    return true;
  }

  const Graph& graph_;
  std::vector<int> readers_;
};

}  // namespace

bool TransposeFolding::run(Graph& graph) {
  const TransposeFolder fold(graph);
  return rewrite_nodes(graph, [&](ValueId id, GraphRewriter& rewriter) { return fold(id, rewriter); });
}

}  // namespace kestrel::jit
