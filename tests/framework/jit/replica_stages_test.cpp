// split_at_collectives: a replica step's graph split into stages at its collectives, each with a
// shared part (run once) and a replica part (run by every replica), and values routed between
// them through slots.
#include "framework/jit/replica_stages.h"

#include <gtest/gtest.h>

#include "framework/core/error.h"
#include "framework/jit/trace.h"
#include "framework/ops/collective.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/matmul.h"
#include "framework/ops/reduce.h"
#include "framework/ops/shape_ops.h"
#include "tests/support/error_message.h"

namespace kestrel::jit {
namespace {

using testing::contains;
using testing::error_message;

constexpr int kReplicas = 4;

// A toy SGD step: state w [3] (input 0) and count [] (input 1); argument x [2,3] (input 2). Each
// replica's gradient is its rows' sum of x * w; the update reads the all-reduced gradient.

Graph toy_step(bool gather_rows) {
  Trace trace;
  TraceScope active(trace);
  const Tensor w = trace.input({{3}, DType::float32}, "w");
  const Tensor count = trace.input({{}, DType::float32}, "count");
  const Tensor x = trace.input({{2, 3}, DType::float32}, "x");
  const Tensor w_doubled = w * 2.0;  // state alone, before any collective: every part copies it
  const Tensor gradient = ops::sum(x * w_doubled, {.axes = {0}});
  const Tensor summed = ops::cross_replica_sum(gradient, kReplicas);
  const Tensor new_w = w - summed * 0.1 + w_doubled * 0.0;
  const Tensor new_count = count + 1.0;
  std::vector<Tensor> outputs{new_w, new_count};
  if (gather_rows) outputs.push_back(ops::sum(ops::all_gather(x, kReplicas)));
  outputs.push_back(gradient);  // per replica
  Graph graph = trace.finish(outputs);
  graph.alias_output(0, 0);
  graph.alias_output(1, 1);
  return graph;
}

TEST(ReplicaStages, SplitsAtTheCollectiveIntoAReplicaPartAndASharedPart) {
  const ReplicaStages stages = split_at_collectives(toy_step(/*gather_rows=*/true), 2, kReplicas, "toy_step");
  ASSERT_EQ(stages.stages.size(), 2u) << stages.to_string();
  const ReplicaStages::Stage& first = stages.stages[0];
  const ReplicaStages::Stage& second = stages.stages[1];
  ASSERT_TRUE(first.replica_part.has_value());
  EXPECT_TRUE(stages.parts[*first.replica_part].per_replica);
  ASSERT_EQ(first.collectives.size(), 2u);
  EXPECT_EQ(first.collectives[0].op, OpId::cross_replica_sum);
  EXPECT_EQ(first.collectives[1].op, OpId::all_gather);
  EXPECT_FALSE(stages.slot_per_replica[first.collectives[0].output_slot]);  // everyone's result alike
  ASSERT_TRUE(second.shared_part.has_value());
  EXPECT_FALSE(second.replica_part.has_value());
  EXPECT_FALSE(stages.parts[*second.shared_part].per_replica);
  EXPECT_EQ(stages.to_string(),
            "stage 0: replica part (3 ops) -> cross_replica_sum x1, all_gather x1; stage 1: shared part (7 ops)");
}

TEST(ReplicaStages, SlotsFollowTheGraphsInputsThenItsCrossingValues) {
  const ReplicaStages stages = split_at_collectives(toy_step(false), 2, kReplicas, "toy_step");
  ASSERT_GE(stages.slot_per_replica.size(), 3u);
  EXPECT_FALSE(stages.slot_per_replica[0]);  // w: state
  EXPECT_FALSE(stages.slot_per_replica[1]);  // count: state
  EXPECT_TRUE(stages.slot_per_replica[2]);   // x: the replica's own
  ASSERT_EQ(stages.output_slots.size(), 3u);
  EXPECT_FALSE(stages.slot_per_replica[stages.output_slots[0]]);  // the new w
  EXPECT_FALSE(stages.slot_per_replica[stages.output_slots[1]]);  // the new count
  EXPECT_TRUE(stages.slot_per_replica[stages.output_slots[2]]);   // each replica's gradient
}

TEST(ReplicaStages, AnOpOverStateAloneIsCopiedIntoEveryPartThatReadsIt) {
  const ReplicaStages stages = split_at_collectives(toy_step(false), 2, kReplicas, "toy_step");
  int parts_with_the_copy = 0;
  for (const ReplicaStages::Part& part : stages.parts) {
    for (const Node& node : part.graph.nodes()) {
      if (node.kind == NodeKind::op && node.primitive->id() == OpId::multiply && node.spec.shape == Shape{3} &&
          part.graph.node(node.inputs[0]).kind == NodeKind::input && part.graph.node(node.inputs[0]).name == "w") {
        ++parts_with_the_copy;
        break;
      }
    }
  }
  EXPECT_EQ(parts_with_the_copy, 2) << stages.to_string();  // w * 2: in the replica part and the shared part
}

TEST(ReplicaStages, TheLastReaderOfAVariableUpdatesItInPlace) {
  const ReplicaStages stages = split_at_collectives(toy_step(false), 2, kReplicas, "toy_step");
  const ReplicaStages::Part& shared = stages.parts[*stages.stages[1].shared_part];
  int aliased = 0;
  for (std::size_t k = 0; k < shared.graph.outputs().size(); ++k) {
    if (const std::optional<std::size_t> input = shared.graph.output_alias(k)) {
      ++aliased;
      EXPECT_LT(shared.input_slots[*input], 2u);  // a state slot: w or count
    }
  }
  EXPECT_EQ(aliased, 2);
}

TEST(ReplicaStages, ANewStateValueFromOneReplicasValuesIsAnErrorNamingTheVariable) {
  Trace trace;
  TraceScope active(trace);
  const Tensor w = trace.input({{3}, DType::float32}, "dense/kernel");
  const Tensor x = trace.input({{2, 3}, DType::float32}, "x");
  const Tensor summed = ops::cross_replica_sum(ops::sum(x, {.axes = {0}}), kReplicas);
  Graph graph = trace.finish({w - ops::sum(x, {.axes = {0}}), summed});  // updated from this replica's rows
  graph.alias_output(0, 0);
  const std::string m = error_message<JitError>([&] { split_at_collectives(graph, 1, kReplicas, "train_step"); });
  EXPECT_TRUE(contains(m,
                       "'train_step' gives variable 'dense/kernel' a new value computed from one "
                       "replica's own values"))
      << m;
  EXPECT_TRUE(contains(m, "optimizer.apply")) << m;
}

TEST(ReplicaStages, OneReplicaIsOnePartThatMayUpdateState) {
  const Graph graph = toy_step(false);
  const ReplicaStages stages = split_at_collectives(graph, 2, 1, "toy_step");
  ASSERT_EQ(stages.parts.size(), 1u);
  ASSERT_EQ(stages.stages.size(), 1u);
  EXPECT_EQ(stages.parts[0].graph.num_ops(), graph.num_ops());
  EXPECT_EQ(stages.parts[0].graph.output_alias(0), std::optional<std::size_t>(0));
}

TEST(ReplicaStages, AStepAfterAnUpdateReadsTheNewValueInALaterStage) {
  // Two merge points, as a GAN's step: update w, then each replica reads the new w.
  Trace trace;
  TraceScope active(trace);
  const Tensor w = trace.input({{3}, DType::float32}, "w");
  const Tensor x = trace.input({{2, 3}, DType::float32}, "x");
  const Tensor first_w = w - ops::cross_replica_sum(ops::sum(x * w, {.axes = {0}}), kReplicas);
  const Tensor second_w = first_w - ops::cross_replica_sum(ops::sum(x * first_w, {.axes = {0}}), kReplicas);
  Graph graph = trace.finish({second_w});
  graph.alias_output(0, 0);
  const ReplicaStages stages = split_at_collectives(graph, 1, kReplicas, "two_updates");
  EXPECT_EQ(stages.to_string(),
            "stage 0: replica part (2 ops) -> cross_replica_sum x1; stage 1: shared part (1 ops), replica part (2 "
            "ops) -> cross_replica_sum x1; stage 2: shared part (1 ops)");
}

// A Dense layer's step: state w [3, 4]; the replica's rows x [2, 3] and their outputs' gradient
// dy [2, 4] (arguments, as a step's inputs are). The kernel's gradient is x'^T dy over the rows
// of x' = 2x, summed over the replicas and read as [12], as a projection's [d, heads, depth]
// gradient is.
Graph dense_step() {
  Trace trace;
  TraceScope active(trace);
  const Tensor w = trace.input({{3, 4}, DType::float32}, "w");
  const Tensor x = trace.input({{2, 3}, DType::float32}, "x");
  const Tensor dy = trace.input({{2, 4}, DType::float32}, "dy");
  const Tensor hidden = x * 2.0;  // the replica's own: computed in the replica part
  const Tensor gradient = ops::matmul(hidden, dy, {.transpose_a = true});
  const Tensor summed = ops::cross_replica_sum(ops::reshape(gradient, {-1}), kReplicas);
  Graph graph = trace.finish({w - ops::reshape(summed, w.shape()) * 0.1});
  graph.alias_output(0, 0);
  return graph;
}

TEST(ReplicaStages, ASumOfProductsOverTheReplicasRowsIsOneContractionOfTheirOperands) {
  const ReplicaStages stages = split_at_collectives(dense_step(), 1, kReplicas, "train_step");
  ASSERT_EQ(stages.stages.size(), 2u) << stages.to_string();
  ASSERT_EQ(stages.stages[0].collectives.size(), 1u);
  const ReplicaStages::Collective& sum = stages.stages[0].collectives[0];
  ASSERT_TRUE(sum.contraction.has_value());
  const ReplicaStages::Contraction& c = *sum.contraction;
  EXPECT_TRUE(stages.slot_per_replica[c.a_slot]);  // 2x: the replica part's output
  EXPECT_EQ(c.b_slot, 2u);                         // dy: the argument's own slot
  EXPECT_EQ(c.a, (TensorSpec{{2, 3}, DType::float32}));
  EXPECT_EQ(c.b, (TensorSpec{{2, 4}, DType::float32}));
  EXPECT_EQ(c.product, (TensorSpec{{3, 4}, DType::float32}));
  EXPECT_EQ(c.sum_shape, (Shape{12}));
  EXPECT_FALSE(stages.slot_per_replica[sum.output_slot]);
  // The product is the contraction's: no replica multiplies.
  const ReplicaStages::Part& replica = stages.parts[*stages.stages[0].replica_part];
  for (const Node& node : replica.graph.nodes()) {
    EXPECT_FALSE(node.kind == NodeKind::op && node.primitive->id() == OpId::matmul) << replica.graph.to_string();
  }
  EXPECT_EQ(stages.to_string(),
            "stage 0: replica part (1 ops) -> cross_replica_sum x1 (1 as products over every replica's rows); stage 1: "
            "shared part (3 ops)");
}

TEST(ReplicaStages, ABfloat16ProductWidenedBeforeItsSumIsContractedInFloat32) {
  // A mixed_bfloat16 kernel's gradient: computed in bfloat16, cast to the float32 variable's dtype,
  // then summed.
  Trace trace;
  TraceScope active(trace);
  const Tensor w = trace.input({{3, 4}, DType::float32}, "w");
  const Tensor x = trace.input({{2, 3}, DType::bfloat16}, "x");
  const Tensor dy = trace.input({{2, 4}, DType::bfloat16}, "dy");
  const Tensor gradient = ops::cast(ops::matmul(x, dy, {.transpose_a = true}), DType::float32);
  Graph graph = trace.finish({w - ops::cross_replica_sum(gradient, kReplicas)});
  graph.alias_output(0, 0);
  const ReplicaStages stages = split_at_collectives(graph, 1, kReplicas, "train_step");
  ASSERT_EQ(stages.stages[0].collectives.size(), 1u);
  const std::optional<ReplicaStages::Contraction>& c = stages.stages[0].collectives[0].contraction;
  ASSERT_TRUE(c.has_value()) << stages.to_string();
  EXPECT_EQ(c->a, (TensorSpec{{2, 3}, DType::bfloat16}));
  EXPECT_EQ(c->product, (TensorSpec{{3, 4}, DType::float32}));
}

TEST(ReplicaStages, AProductByASharedMatrixIsMultipliedByEachReplicaAndSummed) {
  // x w multiplies the replica's rows by the shared w: the sum of the replicas' products is no
  // product over their rows joined.
  Trace trace;
  TraceScope active(trace);
  const Tensor w = trace.input({{3, 4}, DType::float32}, "w");
  const Tensor x = trace.input({{2, 3}, DType::float32}, "x");
  const Tensor summed = ops::cross_replica_sum(ops::matmul(x, w), kReplicas);
  Graph graph = trace.finish({w - ops::sum(summed, {.axes = {0}}) * 0.1});
  graph.alias_output(0, 0);
  const ReplicaStages stages = split_at_collectives(graph, 1, kReplicas, "train_step");
  ASSERT_EQ(stages.stages[0].collectives.size(), 1u);
  EXPECT_FALSE(stages.stages[0].collectives[0].contraction.has_value());
  EXPECT_EQ(stages.to_string(), "stage 0: replica part (1 ops) -> cross_replica_sum x1; stage 1: shared part (3 ops)");
}

TEST(ReplicaStages, AProductAnotherOpAlsoReadsIsMultipliedByEachReplica) {
  Trace trace;
  TraceScope active(trace);
  const Tensor w = trace.input({{3, 4}, DType::float32}, "w");
  const Tensor x = trace.input({{2, 3}, DType::float32}, "x");
  const Tensor dy = trace.input({{2, 4}, DType::float32}, "dy");
  const Tensor gradient = ops::matmul(x, dy, {.transpose_a = true});
  Graph graph = trace.finish({w - ops::cross_replica_sum(gradient, kReplicas), gradient});  // each replica's too
  graph.alias_output(0, 0);
  const ReplicaStages stages = split_at_collectives(graph, 1, kReplicas, "train_step");
  ASSERT_EQ(stages.stages[0].collectives.size(), 1u);
  EXPECT_FALSE(stages.stages[0].collectives[0].contraction.has_value());
}

}  // namespace
}  // namespace kestrel::jit
