#include "framework/jit/passes/matmul_residual_fusion.h"

#include <vector>

#include "framework/jit/rewriter.h"
#include "framework/ops/matmul.h"
#include "framework/ops/op_list.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::jit {
namespace {

class ResidualFusion {
 public:
  explicit ResidualFusion(const Graph& graph) : graph_(graph), readers_(graph.reader_counts()) {}

  /// Rewrites node `id` into `rewriter` when the pattern holds there; false leaves it to be copied.
  bool operator()(ValueId id, GraphRewriter& rewriter) const {
    return graph_.is_op(id, OpId::add) && fuse(id, rewriter);
  }

 private:
  const Node& node(ValueId id) const { return graph_.node(id); }
  bool read_once(ValueId id) const { return readers_[static_cast<std::size_t>(id)] == 1; }

  // A 2-D float32 matmul that can take a residual (no activation, scale or residual yet), read
  // only by what reads it here.
  bool takes_residual(ValueId id) const {
    const Node& n = node(id);
    return graph_.is_op(id, OpId::matmul) && read_once(id) && n.spec.shape.rank() == 2 &&
           n.spec.dtype == DType::float32 && detail::is_plain_matmul(*n.primitive);
  }

  bool fuse(ValueId add_id, GraphRewriter& rewriter) const {
    const Node& add = node(add_id);
    for (std::size_t side = 0; side < 2; ++side) {
      const ValueId sum = add.inputs[side];
      const ValueId residual = add.inputs[1 - side];
      // Neither side may broadcast: the residual is read element for element with the product.
      if (node(sum).spec != add.spec || node(residual).spec != add.spec || sum == residual) continue;
      const bool reshaped = graph_.is_op(sum, OpId::reshape) && read_once(sum);
      const ValueId product = reshaped ? node(sum).inputs[0] : sum;
      if (!takes_residual(product)) continue;
      const Node& matmul = node(product);
      ValueId laid_out = rewriter.mapped(residual);
      if (reshaped) {
        laid_out = rewriter.add_op(detail::reshape_primitive(matmul.spec.shape), {laid_out}, matmul.spec, add.name);
      }
      std::vector<ValueId> inputs;
      for (ValueId in : matmul.inputs) inputs.push_back(rewriter.mapped(in));
      inputs.push_back(laid_out);
      // The plain product stays as copied, now unread, for the DCE that follows.
      ValueId out =
          rewriter.add_op(detail::matmul_with_residual(*matmul.primitive), std::move(inputs), matmul.spec, matmul.name);
      if (reshaped) out = rewriter.add_op(node(sum).primitive, {out}, add.spec, node(sum).name);
      rewriter.bind(add_id, out);
      return true;
    }
    return false;
  }

  const Graph& graph_;
  std::vector<int> readers_;
};

}  // namespace

bool MatmulResidualFusion::run(Graph& graph) {
  const ResidualFusion fuse(graph);
  return rewrite_nodes(graph, [&](ValueId id, GraphRewriter& rewriter) { return fuse(id, rewriter); });
}

}  // namespace kestrel::jit
