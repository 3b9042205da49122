// MultiHeadAttention, as keras.layers.MultiHeadAttention.
//
//   layers::MultiHeadAttention mha(/*num_heads=*/2, /*key_dim=*/64);
//   Tensor y = mha(x, x);                                              // self-attention [B,T,D] -> [B,T,D]
//   Tensor z = mha(x, x, {.attention_mask = padding_mask});            // [B,S] or [B,T,S], 1 = attend
//   Tensor c = mha(x, x, {.use_causal_mask = true, .training = true}); // position t sees s <= t
//   Tensor a = mha(queries, memory, {.key = keys});                    // cross-attention
//
// On Keras tensors (layers/input_layer.h) the call is recorded for a Functional model, with the
// key, attention_mask and use_causal_mask as Keras records its keyword arguments.
//
// Sublayers and weights follow Keras: "query", "key", "value" project [..., dim] to [..., heads,
// key_dim] (kernel [dim, heads, key_dim], bias [heads, key_dim]); "attention_output" projects
// [..., heads, value_dim] back (kernel [heads, value_dim, out], bias [out]). Scores are scaled by
// 1/sqrt(key_dim); masked positions get -1e9 added before the softmax, so a mask costs two
// elementwise ops and never a host read.
// In a Keras 3 .weights.h5 the projections sit under Keras's attributes, as Keras writes them:
// <mha>/query_dense/vars/0 (kernel), /1 (bias), likewise key_dense, value_dense, output_dense.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "framework/layers/dropout.h"
#include "framework/layers/initializers.h"
#include "framework/layers/layer.h"

namespace kestrel::layers {

namespace detail {

/// Keras's EinsumDense for attention's equations: contracts the last `contracted` axes of x with
/// the kernel's leading axes, giving [..., output_dims...] plus a bias of shape output_dims.
class AttentionProjection : public Layer {
 public:
  AttentionProjection(std::string name, int contracted, std::vector<std::int64_t> output_dims, bool use_bias,
                      Initializer kernel_initializer, Initializer bias_initializer);

  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

  /// Sets the output dims before the layer is built (the output projection learns them late).
  void set_output_dims(std::vector<std::int64_t> output_dims) { output_dims_ = std::move(output_dims); }
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }

 private:
  int contracted_;
  std::vector<std::int64_t> output_dims_;
  bool use_bias_;
  Initializer kernel_initializer_;
  Initializer bias_initializer_;
  Variable kernel_;
  Variable bias_;
};

}  // namespace detail

struct MultiHeadAttentionOptions {
  std::optional<std::int64_t> value_dim;  ///< per-head size of values; key_dim when unset
  double dropout = 0.0;                   ///< dropout on the attention probabilities while training
  bool use_bias = true;
  std::optional<std::int64_t> output_shape;  ///< last dim of the output; the query's when unset
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  std::optional<std::uint64_t> seed;  ///< seeds the attention dropout
  std::string name;
  /// The precision policy (unset: the parent's, else the global one; layers/dtype_policy.h).
  std::optional<DTypePolicy> dtype;
};

struct AttentionCallOptions {
  /// Keys [B, S, dim]; the value tensor when undefined (the usual case).
  Tensor key;
  /// [B, T, S] or [B, S] (a padding mask over keys); bool, integer or float, nonzero = attend.
  Tensor attention_mask;
  /// Query position t attends only to key positions s <= t (decoders, language models).
  bool use_causal_mask = false;
  bool training = false;
};

class MultiHeadAttention : public Layer {
 public:
  MultiHeadAttention(int num_heads, std::int64_t key_dim, MultiHeadAttentionOptions options = {});

  /// Attention of query [B, T, dq] over value [B, S, dv] -> [B, T, output_shape or dq].
  Tensor operator()(const Tensor& query, const Tensor& value, const AttentionCallOptions& options = {}) &;
  /// The same for a temporary layer: on Keras tensors the layer moves into the recorded call.
  Tensor operator()(const Tensor& query, const Tensor& value, const AttentionCallOptions& options = {}) &&;
  /// A call from a Functional config: query and value, and key, attention_mask and
  /// use_causal_mask by keyword.
  Tensor call_recorded(const functional::RecordedCall& call) override;

  /// Takes the query's shape: fixes the output size. Weights are created by the first call.
  void build(const Shape& query_shape) override;

  /// Keras's keys as Keras 3.6 to 3.12 write them; use_gate and sliding_window, which later releases
  /// added, are read (at their defaults) but not written, as earlier releases reject unknown keys.
  nlohmann::json get_config() const override;
  static MultiHeadAttention from_config(const nlohmann::json& config);

  int num_heads() const { return num_heads_; }
  std::int64_t key_dim() const { return key_dim_; }
  std::int64_t value_dim() const { return value_dim_; }
  const MultiHeadAttentionOptions& options() const { return options_; }
  detail::AttentionProjection& query_dense() const { return query_; }
  detail::AttentionProjection& key_dense() const { return key_; }
  detail::AttentionProjection& value_dense() const { return value_; }
  detail::AttentionProjection& output_dense() const { return output_; }

 private:
  /// Records a call on Keras tensors; `kept` keeps a temporary layer alive.
  Tensor record(std::shared_ptr<Layer> kept, const Tensor& query, const Tensor& value,
                const AttentionCallOptions& options);
  /// The additive mask (0 where attending, -1e9 elsewhere) broadcastable to [B, heads, T, S], or
  /// undefined when nothing is masked.
  Tensor mask_bias(const Tensor& attention_mask, bool use_causal_mask, std::int64_t batch, std::int64_t t,
                   std::int64_t s, DType dtype) const;

  int num_heads_;
  std::int64_t key_dim_;
  std::int64_t value_dim_;
  MultiHeadAttentionOptions options_;
  detail::AttentionProjection& query_;
  detail::AttentionProjection& key_;
  detail::AttentionProjection& value_;
  Dropout& dropout_;
  detail::AttentionProjection& output_;
};

}  // namespace kestrel::layers
