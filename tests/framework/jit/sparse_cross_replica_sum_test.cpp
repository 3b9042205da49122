// SparseCrossReplicaSum: the all-reduce of a replica's embedding gradient (a scatter_add of its
// rows into a table) becomes all-gathers of its indices and rows and one scatter_add of them; a
// tied embedding's dense part still sums dense. What it must not touch stays as it was.
#include "framework/jit/passes/sparse_cross_replica_sum.h"

#include <gtest/gtest.h>

#include "framework/jit/passes/dead_code_elimination.h"
#include "framework/ops/collective.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/shape_ops.h"
#include "tests/framework/jit/pass_test_support.h"

namespace kestrel::jit {
namespace {

using pass_testing::count_ops;
using pass_testing::run_pass;
using pass_testing::trace_graph;

constexpr int kReplicasSummed = 8;
const Shape kTable{64, 8};  // 512 elements; a replica's rows below are 2 * 3 * 8 = 48

const std::vector<TensorSpec> kIdsAndRows{{{2, 3}, DType::int64}, {{2, 3, 8}, DType::float32}};

// The op reading value `id`'s first operand, as the rewritten graph has it.
const Node& operand(const Graph& graph, ValueId id, std::size_t i) { return graph.node(graph.node(id).inputs[i]); }

// A replica's embedding gradient (its rows scattered into the table), summed over the replicas.
Graph embedding_gradient_sum() {
  return trace_graph(
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{ops::cross_replica_sum(ops::scatter_add(in[0], in[1], kTable), kReplicasSummed)};
      },
      kIdsAndRows);
}

TEST(SparseCrossReplicaSum, AnEmbeddingGradientsSumBecomesGathersOfItsRows) {
  Graph graph = embedding_gradient_sum();
  ASSERT_TRUE(run_pass(SparseCrossReplicaSum(kReplicasSummed), graph));
  EXPECT_EQ(count_ops(graph, OpId::cross_replica_sum), 0) << graph.to_string();
  EXPECT_EQ(count_ops(graph, OpId::all_gather), 2) << graph.to_string();

  // The output: one scatter_add over every replica's indices and rows, into the same table.
  const ValueId out = graph.outputs()[0];
  const Node& scatter = graph.node(out);
  ASSERT_EQ(scatter.primitive->id(), OpId::scatter_add) << graph.to_string();
  EXPECT_EQ(scatter.spec, (TensorSpec{kTable, DType::float32}));
  EXPECT_EQ(operand(graph, out, 0).primitive->id(), OpId::all_gather);
  EXPECT_EQ(operand(graph, out, 0).spec, (TensorSpec{{16, 3}, DType::int64}));
  EXPECT_EQ(operand(graph, out, 1).spec, (TensorSpec{{16, 3, 8}, DType::float32}));
}

TEST(SparseCrossReplicaSum, ATiedEmbeddingSumsItsDensePartAndGathersItsRows) {
  // in[2]: the table's dense gradient from its other use (an output projection), added to the
  // lookups' scatter as the backward pass adds a tied weight's gradients.
  Graph graph = trace_graph(
      [](const std::vector<Tensor>& in) {
        const Tensor tied = ops::add(in[2], ops::scatter_add(in[0], in[1], kTable));
        return std::vector<Tensor>{ops::cross_replica_sum(tied, kReplicasSummed)};
      },
      {kIdsAndRows[0], kIdsAndRows[1], {kTable, DType::float32}});
  ASSERT_TRUE(run_pass(SparseCrossReplicaSum(kReplicasSummed), graph));
  const ValueId out = graph.outputs()[0];
  ASSERT_EQ(graph.node(out).primitive->id(), OpId::add) << graph.to_string();
  const Node& dense = operand(graph, out, 0);
  ASSERT_EQ(dense.primitive->id(), OpId::cross_replica_sum);
  EXPECT_EQ(graph.node(dense.inputs[0]).name, "in2");  // the dense gradient, summed as before
  EXPECT_EQ(operand(graph, out, 1).primitive->id(), OpId::scatter_add);
  EXPECT_EQ(count_ops(graph, OpId::all_gather), 2) << graph.to_string();
}

TEST(SparseCrossReplicaSum, LeavesTheOldOpsDeadForTheDceAfterIt) {
  Graph graph = embedding_gradient_sum();
  ASSERT_TRUE(run_pass(SparseCrossReplicaSum(kReplicasSummed), graph));
  EXPECT_EQ(count_ops(graph, OpId::scatter_add), 2);  // the replica's own, which nothing reads now
  ASSERT_TRUE(run_pass(DeadCodeElimination(), graph));
  EXPECT_EQ(count_ops(graph, OpId::scatter_add), 1) << graph.to_string();
}

// Each case keeps its cross_replica_sum: the sum is not of a scatter all_gather could replace.
struct Untouched {
  const char* name;
  pass_testing::TracedFn fn;
  std::vector<TensorSpec> specs;
};

class SparseCrossReplicaSumLeaves : public ::testing::TestWithParam<Untouched> {};

TEST_P(SparseCrossReplicaSumLeaves, TheDenseSum) {
  Graph graph = trace_graph(GetParam().fn, GetParam().specs);
  const std::string before = graph.to_string();
  EXPECT_FALSE(run_pass(SparseCrossReplicaSum(kReplicasSummed), graph));
  EXPECT_EQ(graph.to_string(), before);
}

const Untouched kUntouched[] = {
    {"a_scatter_read_elsewhere_too",
     [](const std::vector<Tensor>& in) {
       const Tensor g = ops::scatter_add(in[0], in[1], kTable);
       return std::vector<Tensor>{ops::cross_replica_sum(g, kReplicasSummed), g};
     },
     kIdsAndRows},
    {"a_scatter_along_axis_1",
     [](const std::vector<Tensor>& in) {
       return std::vector<Tensor>{ops::cross_replica_sum(ops::scatter_add(in[0], in[1], {8, 64}, 1), kReplicasSummed)};
     },
     {{{2, 3}, DType::int64}, {{8, 2, 3}, DType::float32}}},
    {"more_rows_than_the_table_holds",
     [](const std::vector<Tensor>& in) {
       return std::vector<Tensor>{ops::cross_replica_sum(ops::scatter_add(in[0], in[1], {2, 8}), kReplicasSummed)};
     },
     kIdsAndRows},
    {"one_index",
     [](const std::vector<Tensor>& in) {
       return std::vector<Tensor>{ops::cross_replica_sum(ops::scatter_add(in[0], in[1], kTable), kReplicasSummed)};
     },
     {{{}, DType::int64}, {{8}, DType::float32}}},
    {"a_sum_of_anything_else",
     [](const std::vector<Tensor>& in) {
       return std::vector<Tensor>{ops::cross_replica_sum(ops::multiply(in[0], in[0]), kReplicasSummed)};
     },
     {{kTable, DType::float32}}},
};

INSTANTIATE_TEST_SUITE_P(Cases, SparseCrossReplicaSumLeaves, ::testing::ValuesIn(kUntouched),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(SparseCrossReplicaSum, OneReplicaHasNothingToGather) {
  Graph graph = trace_graph(
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{ops::cross_replica_sum(ops::scatter_add(in[0], in[1], kTable), 1)};
      },
      kIdsAndRows);
  EXPECT_FALSE(run_pass(SparseCrossReplicaSum(1), graph));
}

}  // namespace
}  // namespace kestrel::jit
