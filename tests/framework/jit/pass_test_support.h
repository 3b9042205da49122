// Helpers for the jit tests: trace a function into a graph, count its nodes, check that a
// rewritten graph computes exactly what the original did, and a small MLP train step to compile.
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

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/random.h"
#include "framework/jit/executor.h"
#include "framework/jit/graph.h"
#include "framework/jit/pass.h"
#include "framework/jit/trace.h"
#include "framework/ops/ops.h"

namespace kestrel::jit::pass_testing {

using TracedFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

/// Runs fn once on symbolic inputs shaped like `inputs` (named in0, in1, ...) and returns the graph.
inline Graph trace_graph(const TracedFn& fn, const std::vector<Tensor>& inputs) {
  Trace trace;
  TraceScope active(trace);
  std::vector<Tensor> symbolic;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    symbolic.push_back(trace.input(inputs[i].spec(), "in" + std::to_string(i)));
  return trace.finish(fn(symbolic));
}

/// The same, from specs alone.
inline Graph trace_graph(const TracedFn& fn, const std::vector<TensorSpec>& specs) {
  Trace trace;
  TraceScope active(trace);
  std::vector<Tensor> symbolic;
  for (std::size_t i = 0; i < specs.size(); ++i) symbolic.push_back(trace.input(specs[i], "in" + std::to_string(i)));
  return trace.finish(fn(symbolic));
}

/// An MLP's cross-entropy loss on (x, labels) and its gradients for params: (kernel, bias) per
/// layer, ReLU between layers.
inline std::pair<Tensor, std::vector<Tensor>> mlp_loss_and_gradients(const Tensor& x, const Tensor& labels,
                                                                     const std::vector<Tensor>& params) {
  GradientTape tape;
  for (const Tensor& p : params) tape.watch(p);
  Tensor h = x;
  for (std::size_t layer = 0; layer + 1 < params.size(); layer += 2) {
    h = ops::add(ops::matmul(h, params[layer]), params[layer + 1]);
    if (layer + 2 < params.size()) h = ops::relu(h);
  }
  Tensor loss = ops::mean(ops::sparse_softmax_cross_entropy(h, labels));
  std::vector<Tensor> grads = tape.gradient(loss, params);
  return {loss, grads};
}

/// An MLP train step written with ops. in: x, labels, then (kernel, bias) per layer; out: the
/// loss, then each parameter after one SGD step (learning rate 0.1).
inline std::vector<Tensor> mlp_train_step(const std::vector<Tensor>& in) {
  std::vector<Tensor> params(in.begin() + 2, in.end());
  auto [loss, grads] = mlp_loss_and_gradients(in[0], in[1], params);
  std::vector<Tensor> out{loss};
  for (std::size_t k = 0; k < params.size(); ++k) out.push_back(params[k] - grads[k] * 0.1);
  return out;
}

/// Inputs for mlp_train_step: layer widths {in, hidden..., classes}, a fixed function of seed.
inline std::vector<Tensor> mlp_inputs(std::int64_t batch, const std::vector<std::int64_t>& widths, std::uint64_t seed) {
  std::vector<std::int64_t> labels(static_cast<std::size_t>(batch));
  for (std::size_t i = 0; i < labels.size(); ++i) {
    labels[i] = static_cast<std::int64_t>((i * 7 + seed) % static_cast<std::uint64_t>(widths.back()));
  }
  std::vector<Tensor> in{random::normal({batch, widths[0]}, random::Key(seed)), Tensor::from_vector(labels, {batch})};
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    in.push_back(random::normal({widths[i], widths[i + 1]}, random::Key(seed + 10 + i)) * 0.05);
    in.push_back(random::normal({widths[i + 1]}, random::Key(seed + 20 + i)) * 0.01);
  }
  return in;
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
  EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0)
      << what << ": " << a.to_string() << " vs " << b.to_string();
}

/// Both graphs give bit-identical outputs on these inputs.
inline void expect_same_outputs(const Graph& before, const Graph& after, const std::vector<Tensor>& inputs) {
  const std::vector<Tensor> want = Executor(before).run(inputs);
  const std::vector<Tensor> got = Executor(after).run(inputs);
  ASSERT_EQ(want.size(), got.size());
  for (std::size_t i = 0; i < want.size(); ++i) expect_bitwise_equal(got[i], want[i], "output " + std::to_string(i));
}

}  // namespace kestrel::jit::pass_testing
