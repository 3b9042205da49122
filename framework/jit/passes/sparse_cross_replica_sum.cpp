#include "framework/jit/passes/sparse_cross_replica_sum.h"

#include <memory>
#include <string>
#include <vector>

#include "framework/jit/rewriter.h"
#include "framework/ops/collective.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::jit {
namespace {

class GatheredSums {
 public:
  GatheredSums(const Graph& graph, int replicas)
      : graph_(graph),
        replicas_(replicas),
        gather_(detail::all_gather_primitive(replicas)),
        readers_(graph.reader_counts()) {}

  /// Rewrites node `id` into `rewriter` when it is a sum the pass gathers; false leaves it to be copied.
  bool operator()(ValueId id, GraphRewriter& rewriter) const {
    return is_op(id, OpId::cross_replica_sum) && rewrite_sum(id, rewriter);
  }

 private:
  static std::size_t at(ValueId v) { return static_cast<std::size_t>(v); }
  const Node& node(ValueId id) const { return graph_.node(id); }
  bool is_op(ValueId id, OpId op) const { return graph_.is_op(id, op); }

  // A scatter_add read once (by the sum, or by the add the sum reads), whose rows all_gather can
  // join: along axis 0, with indices of rank >= 1, and a replica's rows fewer elements than the table.
  bool is_gatherable_scatter(ValueId id) const {
    if (!is_op(id, OpId::scatter_add) || readers_[at(id)] != 1) return false;
    const Node& scatter = node(id);
    const TensorSpec& indices = node(scatter.inputs[0]).spec;
    const TensorSpec& rows = node(scatter.inputs[1]).spec;
    return detail::scatter_add_axis(*scatter.primitive) == 0 && indices.shape.rank() >= 1 &&
           rows.shape.numel() < scatter.spec.shape.numel();
  }

  // One scatter_add of every replica's indices and rows, all-gathered: the sum over the replicas
  // of the scatter_add each made of its own.
  ValueId gathered_scatter(ValueId scatter_id, const std::string& scope, GraphRewriter& rewriter) const {
    const Node& scatter = node(scatter_id);
    std::vector<ValueId> gathered;
    for (ValueId in : scatter.inputs) {
      TensorSpec spec = node(in).spec;
      spec.shape[0] *= replicas_;
      gathered.push_back(rewriter.add_op(gather_, {rewriter.mapped(in)}, spec, scope));
    }
    return rewriter.add_op(scatter.primitive, std::move(gathered), scatter.spec, scatter.name);
  }

  bool rewrite_sum(ValueId sum_id, GraphRewriter& rewriter) const {
    const Node& sum = node(sum_id);
    const ValueId summed = sum.inputs[0];
    if (is_gatherable_scatter(summed)) {
      rewriter.bind(sum_id, gathered_scatter(summed, sum.name, rewriter));
      return true;
    }
    // dense + scatter (or scatter + dense) of one spec, read by this sum alone: a tied embedding.
    if (!is_op(summed, OpId::add) || readers_[at(summed)] != 1) return false;
    const Node& add = node(summed);
    for (std::size_t side = 0; side < 2; ++side) {
      const ValueId scatter = add.inputs[side];
      const ValueId dense = add.inputs[1 - side];
      if (!is_gatherable_scatter(scatter) || node(dense).spec != add.spec || node(scatter).spec != add.spec) continue;
      std::vector<ValueId> operands(2);
      operands[1 - side] = rewriter.add_op(sum.primitive, {rewriter.mapped(dense)}, add.spec, sum.name);
      operands[side] = gathered_scatter(scatter, sum.name, rewriter);
      rewriter.bind(sum_id, rewriter.add_op(add.primitive, std::move(operands), add.spec, add.name));
      return true;
    }
    return false;
  }

  const Graph& graph_;
  int replicas_;
  std::shared_ptr<const Primitive> gather_;
  std::vector<int> readers_;
};

}  // namespace

bool SparseCrossReplicaSum::run(Graph& graph) {
  if (replicas_ <= 1) return false;
  const GatheredSums gather(graph, replicas_);
  return rewrite_nodes(graph, [&](ValueId id, GraphRewriter& rewriter) { return gather(id, rewriter); });
}

}  // namespace kestrel::jit
