// Op table entries for the collectives, cross_replica_sum and all_gather. As kernels they are the
// one-replica group (the value itself); over several replicas only a replicated program runs them,
// between its stages (tests/framework/jit/replicated_function_test.cpp).
#include <gtest/gtest.h>

#include "framework/core/error.h"
#include "framework/jit/trace.h"
#include "framework/ops/collective.h"
#include "tests/framework/ops/op_case.h"
#include "tests/support/error_message.h"

namespace kestrel::testing {
namespace {

OpCase one_replica_case(OpId op, std::string label, Tensor (*run)(const Tensor&, int)) {
  OpCase c;
  c.op = op;
  c.label = std::move(label);
  c.make_inputs = [] { return Inputs{uniform_tensor({3, 4}, 41)}; };
  c.run = [run](const Inputs& x) { return run(x[0], 1); };
  c.reference = [](const Inputs& x) { return x[0]; };
  return c;
}

std::vector<OpCase> collective_cases() {
  return {one_replica_case(OpId::cross_replica_sum, "cross_replica_sum_one_replica", &ops::cross_replica_sum),
          one_replica_case(OpId::all_gather, "all_gather_one_replica", &ops::all_gather)};
}

KESTREL_REGISTER_OP_CASES(collective_cases);

TEST(Collectives, OverSeveralReplicasTheyRunOnlyInsideAReplicatedProgram) {
  const std::string m = error_message<JitError>([] { ops::cross_replica_sum(Tensor::ones({2}), 8); });
  EXPECT_TRUE(contains(m, "cross_replica_sum over 8 replicas ran as a kernel")) << m;
  EXPECT_TRUE(contains(m, "jit::ReplicatedFunction")) << m;
  EXPECT_TRUE(contains(error_message<JitError>([] { ops::all_gather(Tensor::ones({2}), 2); }), "all_gather over 2"));
}

TEST(Collectives, TracedTheyKeepTheirShapesAndReplicaCount) {
  jit::Trace trace;
  jit::TraceScope active(trace);
  const Tensor x = trace.input({{4, 3}, DType::float32}, "x");
  EXPECT_EQ(ops::cross_replica_sum(x, 8).shape(), (Shape{4, 3}));
  EXPECT_EQ(ops::all_gather(x, 8).shape(), (Shape{32, 3}));
  const jit::Graph graph = trace.finish({ops::all_gather(x, 8)});
  EXPECT_TRUE(contains(graph.to_string(), "all_gather(%0) {replicas=8}")) << graph.to_string();
}

TEST(Collectives, BadArgumentsNameTheOp) {
  EXPECT_TRUE(contains(error_message<ValueError>([] { ops::cross_replica_sum(Tensor::ones({2}), 0); }),
                       "[cross_replica_sum] replicas must be >= 1"));
  EXPECT_TRUE(contains(error_message<ShapeError>([] { ops::all_gather(Tensor::scalar(1.0), 2); }),
                       "[all_gather] x is float32[], a scalar"));
}

}  // namespace
}  // namespace kestrel::testing
