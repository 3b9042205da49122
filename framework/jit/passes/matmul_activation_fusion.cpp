#include "framework/jit/passes/matmul_activation_fusion.h"

#include <vector>

#include "framework/jit/rewriter.h"
#include "framework/ops/matmul.h"

namespace kestrel::jit {
namespace {

class ActivationFusion {
 public:
  explicit ActivationFusion(const Graph& graph) : graph_(graph), readers_(graph.reader_counts()) {}

  /// Rewrites node `id` into `rewriter` when the pattern holds there; false leaves it to be copied.
  bool operator()(ValueId id, GraphRewriter& rewriter) const { return fuse(id, rewriter); }

 private:
  const Node& node(ValueId id) const { return graph_.node(id); }
  bool read_once(ValueId id) const { return readers_[static_cast<std::size_t>(id)] == 1; }

  bool fuse(ValueId id, GraphRewriter& rewriter) const {
    const Node& activation = node(id);
    if (activation.kind != NodeKind::op || activation.inputs.size() != 1) return false;
    // oneDNN applies relu as C is stored, for nothing (kernels_bench matmul_epilogue, bias_relu
    // 1.00-1.01x the plain product's time on Zen 5). GELU, either form, runs as ops::gelu's own
    // kernel on each tile the GEMM finishes (kernels/gemm.cpp): the unfused op's bits and about its
    // pass's time, without the pre-activation's buffer.
    const std::optional<ElementwiseOpcode> opcode = activation.primitive->fusion_opcode();
    if (opcode != ElementwiseOpcode::relu && opcode != ElementwiseOpcode::gelu &&
        opcode != ElementwiseOpcode::gelu_tanh) {
      return false;
    }
    const ValueId sum = activation.inputs[0];
    const bool reshaped = graph_.is_op(sum, OpId::reshape) && read_once(sum);
    const ValueId product = reshaped ? node(sum).inputs[0] : sum;
    if (!graph_.is_op(product, OpId::matmul) || !read_once(product)) return false;
    const Node& matmul = node(product);
    if (matmul.spec.dtype != DType::float32 || activation.spec.dtype != DType::float32) return false;
    const std::shared_ptr<const Primitive> fused = detail::matmul_with_activation(*matmul.primitive, *opcode);
    if (!fused) return false;
    std::vector<ValueId> inputs;
    for (ValueId in : matmul.inputs) inputs.push_back(rewriter.mapped(in));
    // The product's old id stays as copied (now unread, for the DCE that follows).
    ValueId out = rewriter.add_op(fused, std::move(inputs), matmul.spec, matmul.name);
    if (reshaped) out = rewriter.add_op(node(sum).primitive, {out}, activation.spec, node(sum).name);
    rewriter.bind(id, out);
    return true;
  }

  const Graph& graph_;
  std::vector<int> readers_;
};

}  // namespace

bool MatmulActivationFusion::run(Graph& graph) {
  const ActivationFusion fuse(graph);
  return rewrite_nodes(graph, [&](ValueId id, GraphRewriter& rewriter) { return fuse(id, rewriter); });
}

}  // namespace kestrel::jit
