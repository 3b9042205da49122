// Multi-head attention as the layers write it, for the tests of the passes that rewrite its graph
// (transpose folding, scale folding): queries, keys and values as the projections give them,
// [B, T, H, D], the heads moved forward for the products and back after them.
//
//   const std::vector<Tensor> qkv = attention_graphs::projections(DType::float32);
//   Graph g = pass_testing::trace_graph(attention_graphs::attention_with_gradients, qkv);
#pragma once

#include <vector>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/random.h"
#include "framework/ops/ops.h"

namespace kestrel::jit::attention_graphs {

constexpr std::int64_t kBatch = 2, kTokens = 24, kHeads = 3, kDepth = 16;
/// 1/sqrt(kDepth), the factor layers::MultiHeadAttention puts on the queries.
constexpr double kQueryScale = 0.25;

/// Queries, keys and values, [kBatch, kTokens, kHeads, kDepth], from keys 1, 2 and 3.
inline std::vector<Tensor> projections(DType dtype) {
  std::vector<Tensor> out;
  for (std::uint64_t seed : {1, 2, 3}) {
    out.push_back(ops::cast(random::normal({kBatch, kTokens, kHeads, kDepth}, random::Key(seed)), dtype));
  }
  return out;
}

/// [B, T, H, D] <-> [B, H, T, D].
inline Tensor heads_forward(const Tensor& x) { return ops::transpose(x, {0, 2, 1, 3}); }

/// Scores, softmax and context, [B, T, H, D], with the queries multiplied by `query_scale` first
/// (1: no multiply).
inline Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, double query_scale = 1.0) {
  const Tensor queries = query_scale == 1.0 ? q : ops::multiply(q, ops::scalar_like(q, query_scale));
  const Tensor scores = ops::matmul(heads_forward(queries), heads_forward(k), {.transpose_b = true});
  return heads_forward(ops::matmul(ops::softmax(scores, -1), heads_forward(v)));
}

/// The attention's output, and the gradients of a loss on it for q, k and v (in: q, k, v).
inline std::vector<Tensor> attention_with_gradients(const std::vector<Tensor>& in, double query_scale = 1.0) {
  GradientTape tape;
  for (const Tensor& t : in) tape.watch(t);
  const Tensor out = attention(in[0], in[1], in[2], query_scale);
  std::vector<Tensor> result{out};
  for (const Tensor& g : tape.gradient(ops::sum(ops::square(out)), in)) result.push_back(g);
  return result;
}

}  // namespace kestrel::jit::attention_graphs
