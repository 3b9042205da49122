#include "framework/layers/transformer_encoder.h"

#include <sstream>
#include <utility>

#include "framework/core/error.h"
#include "framework/layers/autocast_scope.h"
#include "framework/ops/ops.h"

namespace kestrel::layers {
TransformerEncoder::TransformerEncoder(TransformerEncoderOptions options)
    : Layer("TransformerEncoder", options.name, options.dtype), options_(std::move(options)) {
  if (options_.intermediate_dim <= 0 || options_.num_heads <= 0) {
    throw ValueError(error_prefix() + "intermediate_dim is " + std::to_string(options_.intermediate_dim) +
                     " and num_heads is " + std::to_string(options_.num_heads) +
                     "; set both, e.g. TransformerEncoder({.intermediate_dim = 512, .num_heads = 2})");
  }
  if (!(options_.dropout >= 0.0 && options_.dropout < 1.0)) {
    std::ostringstream r;
    r << options_.dropout;
    throw ValueError(error_prefix() + "dropout is " + r.str() + "; it must be in [0, 1)");
  }
}

void TransformerEncoder::build(const Shape& input_shape) {
  if (input_shape.rank() != 3) {
    throw ShapeError(error_prefix() + "input is " + input_shape.to_string() +
                     "; TransformerEncoder takes [batch, positions, features] (embed token ids first)");
  }
  hidden_dim_ = input_shape[-1];
  if (hidden_dim_ % options_.num_heads != 0) {
    throw ShapeError(error_prefix() + "input is " + input_shape.to_string() + ": its " + std::to_string(hidden_dim_) +
                     " features do not split into " + std::to_string(options_.num_heads) +
                     " heads; choose num_heads dividing " + std::to_string(hidden_dim_));
  }
  const TransformerEncoderOptions& o = options_;
  attention_ = &add<MultiHeadAttention>(o.num_heads, hidden_dim_ / o.num_heads,
                                        MultiHeadAttentionOptions{.dropout = o.dropout,
                                                                  .kernel_initializer = o.kernel_initializer,
                                                                  .bias_initializer = o.bias_initializer,
                                                                  .name = "self_attention_layer"});
  attention_norm_ = &add<LayerNormalization>(
      LayerNormalizationOptions{.epsilon = o.layer_norm_epsilon, .name = "self_attention_layer_norm"});
  attention_dropout_ = &add<Dropout>(o.dropout, DropoutOptions{.name = "self_attention_dropout"});
  feedforward_norm_ = &add<LayerNormalization>(
      LayerNormalizationOptions{.epsilon = o.layer_norm_epsilon, .name = "feedforward_layer_norm"});
  intermediate_ = &add<Dense>(o.intermediate_dim, DenseOptions{.activation = o.activation,
                                                               .kernel_initializer = o.kernel_initializer,
                                                               .bias_initializer = o.bias_initializer,
                                                               .name = "feedforward_intermediate_dense"});
  output_ = &add<Dense>(hidden_dim_, DenseOptions{.kernel_initializer = o.kernel_initializer,
                                                  .bias_initializer = o.bias_initializer,
                                                  .name = "feedforward_output_dense"});
  feedforward_dropout_ = &add<Dropout>(o.dropout, DropoutOptions{.name = "feedforward_dropout"});
}

Tensor TransformerEncoder::operator()(const Tensor& x, const TransformerEncoderCallOptions& options) {
  if (!x.defined()) throw ValueError(error_prefix() + "was called on an undefined tensor");
  const CallScope scope(*this);
  const Tensor input = scope.input(x);
  maybe_build(input.shape());
  Tensor y = forward(input, options);
  record_output_shape(y.shape());
  return y;
}

Tensor TransformerEncoder::call(const Tensor& x, bool training) { return forward(x, {.training = training}); }

Tensor TransformerEncoder::forward(const Tensor& x, const TransformerEncoderCallOptions& options) {
  if (x.rank() != 3 || x.shape()[-1] != hidden_dim_) {
    throw ShapeError(error_prefix() + "input is " + x.shape().to_string() + " but the block was built for " +
                     std::to_string(hidden_dim_) + " features; feed [batch, positions, " + std::to_string(hidden_dim_) +
                     "]");
  }
  const bool training = options.training;
  const bool pre_ln = options_.normalize_first;
  Tensor h = pre_ln ? (*attention_norm_)(x) : x;
  h = (*attention_)(
      h, h,
      {.attention_mask = options.attention_mask, .use_causal_mask = options.use_causal_mask, .training = training});
  h = ops::add((*attention_dropout_)(h, training), x);
  if (!pre_ln) h = (*attention_norm_)(h);

  Tensor residual = h;
  if (pre_ln) h = (*feedforward_norm_)(h);
  h = (*output_)((*intermediate_)(h));
  h = ops::add((*feedforward_dropout_)(h, training), residual);
  if (!pre_ln) h = (*feedforward_norm_)(h);
  return h;
}

}  // namespace kestrel::layers
