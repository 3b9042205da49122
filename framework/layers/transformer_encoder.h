// TransformerEncoder: one Transformer encoder block, as keras_hub.layers.TransformerEncoder.
//
//   layers::TransformerEncoder block({.intermediate_dim = 512, .num_heads = 2, .dropout = 0.1});
//   Tensor h = block(x, {.attention_mask = padding_mask, .training = true});   // [B,T,D] -> [B,T,D]
//   layers::TransformerEncoder gpt_block({.intermediate_dim = 1024, .num_heads = 4, .normalize_first = true});
//   Tensor y = gpt_block(x, {.use_causal_mask = true});                        // a GPT-2 decoder block
//
// Post-LN by default (BERT): x = LN(x + Dropout(SelfAttention(x))); x = LN(x + Dropout(FFN(x))),
// with FFN = Dense(D)(Dense(intermediate_dim, activation)). With normalize_first, each LN moves
// in front of its sublayer (pre-LN, GPT-2). The attention has num_heads heads of D / num_heads.
// With use_causal_mask, position t attends only to positions s <= t, which makes the block a
// decoder-only (GPT) block: keras_hub's TransformerDecoder without cross-attention.
// Sublayers are created by the first call, once D is known, with keras_hub's names:
// "self_attention_layer", "self_attention_layer_norm", "self_attention_dropout",
// "feedforward_layer_norm", "feedforward_intermediate_dense", "feedforward_output_dense",
// "feedforward_dropout". A Keras 3 .weights.h5 holds each under keras_hub's attribute, its name
// with a leading "_": <block>/_self_attention_layer/query_dense/vars/0, <block>/_feedforward_output_dense/vars/0.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "framework/layers/activations.h"
#include "framework/layers/dense.h"
#include "framework/layers/dropout.h"
#include "framework/layers/initializers.h"
#include "framework/layers/layer.h"
#include "framework/layers/layer_normalization.h"
#include "framework/layers/multi_head_attention.h"

namespace kestrel::layers {

struct TransformerEncoderOptions {
  std::int64_t intermediate_dim = 0;  ///< required: the feed-forward hidden size
  int num_heads = 0;                  ///< required: must divide the model dim
  double dropout = 0.0;
  ActivationFn activation = "relu";  ///< of the feed-forward hidden layer
  double layer_norm_epsilon = 1e-5;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  bool normalize_first = false;  ///< pre-LN instead of post-LN
  std::string name;
  /// The precision policy (unset: the parent's, else the global one; layers/dtype_policy.h).
  std::optional<DTypePolicy> dtype;
};

struct TransformerEncoderCallOptions {
  /// [B, S] (padding mask) or [B, T, S]; nonzero = attend.
  Tensor attention_mask;
  bool training = false;
  /// Position t attends only to positions s <= t (combined with attention_mask when both are set).
  bool use_causal_mask = false;
};

class TransformerEncoder : public Layer {
 public:
  explicit TransformerEncoder(TransformerEncoderOptions options);

  /// x [B, T, D] -> [B, T, D]. On Keras tensors the call is recorded for a Functional model, the
  /// mask under keras_hub's keyword: padding_mask for [B, S], attention_mask for [B, T, S].
  Tensor operator()(const Tensor& x, const TransformerEncoderCallOptions& options = {}) &;
  /// The same for a temporary layer: on Keras tensors the layer moves into the recorded call.
  Tensor operator()(const Tensor& x, const TransformerEncoderCallOptions& options = {}) &&;
  /// A call from a Functional config: x, and padding_mask or attention_mask and use_causal_mask by
  /// keyword.
  Tensor call_recorded(const functional::RecordedCall& call) override;
  /// Creates the sublayers for model dim D = input_shape[-1].
  void build(const Shape& input_shape) override;
  /// The block without a mask, so it can sit in a Sequential.
  Tensor call(const Tensor& x, bool training) override;

  /// keras_hub's keys: its TransformerEncoder reads this config, and this one reads keras_hub's.
  nlohmann::json get_config() const override;
  static TransformerEncoder from_config(const nlohmann::json& config);

  const TransformerEncoderOptions& options() const { return options_; }
  /// The self-attention sublayer; null until built.
  MultiHeadAttention* self_attention() const { return attention_; }

 private:
  Tensor forward(const Tensor& x, const TransformerEncoderCallOptions& options);
  /// Records a call on Keras tensors; `kept` keeps a temporary layer alive.
  Tensor record(std::shared_ptr<Layer> kept, const Tensor& x, const TransformerEncoderCallOptions& options);

  TransformerEncoderOptions options_;
  std::int64_t hidden_dim_ = 0;
  MultiHeadAttention* attention_ = nullptr;
  LayerNormalization* attention_norm_ = nullptr;
  Dropout* attention_dropout_ = nullptr;
  LayerNormalization* feedforward_norm_ = nullptr;
  Dense* intermediate_ = nullptr;
  Dense* output_ = nullptr;
  Dropout* feedforward_dropout_ = nullptr;
};

}  // namespace kestrel::layers
