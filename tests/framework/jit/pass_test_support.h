// Helpers for the jit pass tests: trace a function into a graph, count its nodes, and check that
// a rewritten graph computes exactly what the original did.
//
//   Graph g = trace_graph([](auto& in) { return std::vector<Tensor>{ops::exp(in[0])}; }, {x});
//   Graph before = g;
//   EXPECT_TRUE(DeadCodeElimination().run(g));
//   expect_same_outputs(before, g, {x});
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "framework/jit/executor.h"
#include "framework/jit/graph.h"
#include "framework/jit/pass.h"
#include "framework/jit/trace.h"

namespace kestrel::jit::pass_testing {

using TracedFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

/// Runs fn once on symbolic inputs shaped like `inputs` (named in0, in1, ...) and returns the graph.
inline Graph trace_graph(const TracedFn& fn, const std::vector<Tensor>& inputs) {
  Trace trace;
  TraceScope active(trace);
  std::vector<Tensor> symbolic;
  for (std::size_t i = 0; i < inputs.size(); ++i) symbolic.push_back(trace.input(inputs[i].spec(), "in" + std::to_string(i)));
  return trace.finish(fn(symbolic));
}

/// Runs one pass and verifies the result (the pipeline only verifies in debug builds).
inline bool run_pass(Pass&& pass, Graph& graph) {
  const bool changed = pass.run(graph);
  graph.verify();
  return changed;
}

/// Number of op nodes running `op`.
inline std::int64_t count_ops(const Graph& graph, OpId op) {
  std::int64_t n = 0;
  for (const Node& node : graph.nodes()) n += node.kind == NodeKind::op && node.primitive->id() == op;
  return n;
}

/// Number of nodes of a kind (inputs, constants, ops).
inline std::int64_t count_nodes(const Graph& graph, NodeKind kind) {
  std::int64_t n = 0;
  for (const Node& node : graph.nodes()) n += node.kind == kind;
  return n;
}

/// Same spec and the same bytes.
inline void expect_bitwise_equal(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.spec(), b.spec()) << what;
  EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0) << what << ": " << a.to_string() << " vs "
                                                                    << b.to_string();
}

/// Both graphs give bit-identical outputs on these inputs.
inline void expect_same_outputs(const Graph& before, const Graph& after, const std::vector<Tensor>& inputs) {
  const std::vector<Tensor> want = Executor(before).run(inputs);
  const std::vector<Tensor> got = Executor(after).run(inputs);
  ASSERT_EQ(want.size(), got.size());
  for (std::size_t i = 0; i < want.size(); ++i) expect_bitwise_equal(got[i], want[i], "output " + std::to_string(i));
}

}  // namespace kestrel::jit::pass_testing
