#include "framework/layers/transformer_encoder.h"

#include <cstdint>
#include <sstream>
#include <string>
#include <utility>

#include "framework/core/error.h"
#include "framework/layers/autocast_scope.h"
#include "framework/layers/serialization.h"
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

nlohmann::json TransformerEncoder::get_config() const {
  using namespace serialization;  // NOLINT(google-build-using-namespace): the config helpers read as Keras's
  const TransformerEncoderOptions& o = options_;
  nlohmann::json config = Layer::get_config();
  config["intermediate_dim"] = o.intermediate_dim;
  config["num_heads"] = o.num_heads;
  config["dropout"] = o.dropout;
  config["activation"] = to_config(o.activation, error_prefix());
  config["layer_norm_epsilon"] = o.layer_norm_epsilon;
  config["kernel_initializer"] = to_config(o.kernel_initializer);
  config["bias_initializer"] = to_config(o.bias_initializer);
  config["normalize_first"] = o.normalize_first;
  return config;
}

TransformerEncoder TransformerEncoder::from_config(const nlohmann::json& config) {
  using namespace serialization;  // NOLINT(google-build-using-namespace): the config helpers read as Keras's
  const std::string what = "layer class 'TransformerEncoder'";
  LayerBase base = layer_base_from_config(config, what);
  check_null(config, {"activity_regularizer"}, what);
  return TransformerEncoder({.intermediate_dim = required<std::int64_t>(config, "intermediate_dim", what),
                             .num_heads = required<int>(config, "num_heads", what),
                             .dropout = optional<double>(config, "dropout", 0.0, what),
                             .activation = config.contains("activation")
                                               ? activation_from_config(config.at("activation"), what)
                                               : ActivationFn("relu"),
                             .layer_norm_epsilon = optional<double>(config, "layer_norm_epsilon", 1e-5, what),
                             .kernel_initializer = config.contains("kernel_initializer")
                                                       ? initializer_from_config(config.at("kernel_initializer"), what)
                                                       : Initializer("glorot_uniform"),
                             .bias_initializer = config.contains("bias_initializer")
                                                     ? initializer_from_config(config.at("bias_initializer"), what)
                                                     : Initializer("zeros"),
                             .normalize_first = optional<bool>(config, "normalize_first", false, what),
                             .name = std::move(base.name),
                             .dtype = base.dtype});
}

}  // namespace kestrel::layers
