#include "framework/jit/passes/matmul_bias_fusion.h"

#include <vector>

#include "framework/jit/rewriter.h"
#include "framework/ops/matmul.h"
#include "framework/ops/op_list.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::jit {
namespace {

class BiasFusion {
 public:
  explicit BiasFusion(const Graph& graph) : graph_(graph), readers_(graph.reader_counts()) {}

  /// Rewrites node `id` into `rewriter` when the pattern holds there; false leaves it to be copied.
  bool operator()(ValueId id, GraphRewriter& rewriter) const {
    return graph_.is_op(id, OpId::add) && fuse(id, rewriter);
  }

 private:
  static std::size_t at(ValueId v) { return static_cast<std::size_t>(v); }
  const Node& node(ValueId id) const { return graph_.node(id); }
  bool is_op(ValueId id, OpId op) const { return graph_.is_op(id, op); }
  bool read_once(ValueId id) const { return readers_[at(id)] == 1; }

  // A two-operand 2-D float32 matmul read only by what reads it here. A bfloat16 product is
  // rounded before a separate add and rounded again after it, where the GEMM's bias is added
  // before the one rounding: fused, a program would no longer give its eager ops' numbers. (The
  // layers put a bfloat16 bias in the epilogue themselves, eager and compiled alike.)
  bool is_plain_product(ValueId id) const {
    const Node& n = node(id);
    return is_op(id, OpId::matmul) && detail::is_plain_matmul(*n.primitive) && read_once(id) && n.inputs.size() == 2 &&
           n.spec.shape.rank() == 2 && n.spec.dtype == DType::float32;
  }

  // True when `bias` holds one value per column of the [M, N] product as `sum` (the product, or its
  // reshape) lays the columns out: its shape is sum's trailing dims, whose product is N, and the
  // dims before them multiply to M.
  static bool is_column_bias(const TensorSpec& bias, const TensorSpec& sum, const TensorSpec& product) {
    const Shape& b = bias.shape;
    const Shape& s = sum.shape;
    if (bias.dtype != product.dtype || b.rank() < 1 || b.rank() > s.rank() || b.numel() != product.shape[1]) {
      return false;
    }
    std::int64_t rows = 1;
    for (int i = 0; i < s.rank() - b.rank(); ++i) rows *= s[i];
    for (int i = 0; i < b.rank(); ++i) {
      if (b[i] != s[s.rank() - b.rank() + i]) return false;
    }
    return rows == product.shape[0];
  }

  bool fuse(ValueId add_id, GraphRewriter& rewriter) const {
    const Node& add = node(add_id);
    for (std::size_t side = 0; side < 2; ++side) {
      const ValueId sum = add.inputs[side];
      const ValueId bias = add.inputs[1 - side];
      if (node(sum).spec != add.spec) continue;  // the bias side must not broadcast the sum
      const bool reshaped = is_op(sum, OpId::reshape) && read_once(sum);
      const ValueId product = reshaped ? node(sum).inputs[0] : sum;
      if (!is_plain_product(product) || !is_column_bias(node(bias).spec, add.spec, node(product).spec)) continue;
      const Node& matmul = node(product);
      const std::int64_t n = matmul.spec.shape[1];
      ValueId flat_bias = rewriter.mapped(bias);
      if (node(bias).spec.shape.rank() != 1) {
        flat_bias = rewriter.add_op(detail::reshape_primitive(Shape{n}), {flat_bias},
                                    TensorSpec{Shape{n}, node(bias).spec.dtype}, add.name);
      }
      // The plain product stays as copied, now unread, for the DCE that follows.
      ValueId biased = rewriter.add_op(
          matmul.primitive, {rewriter.mapped(matmul.inputs[0]), rewriter.mapped(matmul.inputs[1]), flat_bias},
          matmul.spec, matmul.name);
      if (reshaped) biased = rewriter.add_op(node(sum).primitive, {biased}, add.spec, node(sum).name);
      rewriter.bind(add_id, biased);
      return true;
    }
    return false;
  }

  const Graph& graph_;
  std::vector<int> readers_;
};

}  // namespace

bool MatmulBiasFusion::run(Graph& graph) {
  const BiasFusion fuse(graph);
  return rewrite_nodes(graph, [&](ValueId id, GraphRewriter& rewriter) { return fuse(id, rewriter); });
}

}  // namespace kestrel::jit
