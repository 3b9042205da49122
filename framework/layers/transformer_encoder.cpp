#include "framework/layers/transformer_encoder.h"

#include <cstdint>
#include <sstream>
#include <string>
#include <utility>

#include "framework/core/error.h"
#include "framework/layers/autocast_scope.h"
#include "framework/layers/keras_tensor.h"
#include "framework/layers/layer_classes.h"
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
  attention_ = &add_as<MultiHeadAttention>("_self_attention_layer", o.num_heads, hidden_dim_ / o.num_heads,
                                           MultiHeadAttentionOptions{.dropout = o.dropout,
                                                                     .kernel_initializer = o.kernel_initializer,
                                                                     .bias_initializer = o.bias_initializer,
                                                                     .name = "self_attention_layer"});
  attention_norm_ = &add_as<LayerNormalization>(
      "_self_attention_layer_norm",
      LayerNormalizationOptions{.epsilon = o.layer_norm_epsilon, .name = "self_attention_layer_norm"});
  attention_dropout_ =
      &add_as<Dropout>("_self_attention_dropout", o.dropout, DropoutOptions{.name = "self_attention_dropout"});
  feedforward_norm_ = &add_as<LayerNormalization>(
      "_feedforward_layer_norm",
      LayerNormalizationOptions{.epsilon = o.layer_norm_epsilon, .name = "feedforward_layer_norm"});
  intermediate_ = &add_as<Dense>("_feedforward_intermediate_dense", o.intermediate_dim,
                                 DenseOptions{.activation = o.activation,
                                              .kernel_initializer = o.kernel_initializer,
                                              .bias_initializer = o.bias_initializer,
                                              .name = "feedforward_intermediate_dense"});
  output_ = &add_as<Dense>("_feedforward_output_dense", hidden_dim_,
                           DenseOptions{.kernel_initializer = o.kernel_initializer,
                                        .bias_initializer = o.bias_initializer,
                                        .name = "feedforward_output_dense"});
  feedforward_dropout_ =
      &add_as<Dropout>("_feedforward_dropout", o.dropout, DropoutOptions{.name = "feedforward_dropout"});
}

namespace {

// The call options a Functional call passed by keyword, under keras_hub's names.
TransformerEncoderCallOptions encoder_keyword_options(const Layer& layer, const functional::Keywords& keywords,
                                                      const std::vector<Tensor>& keyword_tensors) {
  TransformerEncoderCallOptions options;
  for (std::size_t i = 0; i < keywords.tensors.size(); ++i) {
    const std::string& name = keywords.tensors[i];
    if (name != "padding_mask" && name != "attention_mask") {
      throw ValueError(layer.error_prefix() + "takes padding_mask or attention_mask by keyword, not '" + name + "'");
    }
    if (options.attention_mask.defined()) {
      throw ValueError(layer.error_prefix() +
                       "the call passes both padding_mask and attention_mask; Kestrel takes one mask: merge them "
                       "into one [batch, positions, positions] attention_mask");
    }
    options.attention_mask = keyword_tensors[i];
  }
  options.use_causal_mask = functional::use_causal_mask(keywords, layer.error_prefix());
  return options;
}

}  // namespace

Tensor TransformerEncoder::record(std::shared_ptr<Layer> kept, const Tensor& x,
                                  const TransformerEncoderCallOptions& options) {
  std::vector<Tensor> inputs{x};
  functional::RecordOptions record;
  if (options.attention_mask.defined()) {
    inputs.push_back(options.attention_mask);
    record.keywords.tensors.emplace_back(options.attention_mask.rank() == 2 ? "padding_mask" : "attention_mask");
  }
  if (options.use_causal_mask) record.keywords.flags.emplace_back("use_causal_mask", true);
  record.call = [this, keywords = record.keywords](const std::vector<Tensor>& xs, bool training) {
    TransformerEncoderCallOptions replay =
        encoder_keyword_options(*this, keywords, std::vector<Tensor>(xs.begin() + 1, xs.end()));
    replay.training = training;
    return (*this)(xs[0], replay);
  };
  return functional::record_call(*this, std::move(kept), std::move(inputs), std::move(record));
}

Tensor TransformerEncoder::operator()(const Tensor& x, const TransformerEncoderCallOptions& options) && {
  if (!x.defined() || !functional::is_keras_tensor(x)) return (*this)(x, options);
  const std::shared_ptr<Layer> kept = move_to_heap(std::move(*this));
  return static_cast<TransformerEncoder&>(*kept).record(kept, x, options);
}

Tensor TransformerEncoder::call_recorded(const functional::RecordedCall& call) {
  if (call.list || call.positional.size() != 1 || !call.input_keys.empty()) {
    throw ValueError(error_prefix() + "takes one tensor, and the call passes " +
                     std::to_string(call.positional.size()) + (call.list ? " in a list" : ""));
  }
  return (*this)(call.positional.front(), encoder_keyword_options(*this, call.keywords, call.keyword_tensors));
}

Tensor TransformerEncoder::operator()(const Tensor& x, const TransformerEncoderCallOptions& options) & {
  if (!x.defined()) throw ValueError(error_prefix() + "was called on an undefined tensor");
  if (functional::is_keras_tensor(x)) return record(nullptr, x, options);
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
