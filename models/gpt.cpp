#include "models/gpt.h"

#include <utility>

#include "framework/autodiff/recording.h"
#include "framework/core/error.h"
#include "framework/ops/ops.h"
#include "models/token_inputs.h"
#include "models/transformer_sizes.h"

namespace kestrel::models {
namespace {

GPTOptions validated(const std::string& prefix, GPTOptions o) {
  check_transformer_sizes(prefix, sizes_of(o));
  return o;
}

}  // namespace

ActivationFn gelu_approximate() {
  return ActivationFn("gelu_approximate", [](const Tensor& x) { return ops::gelu(x, {.approximate = true}); });
}

GPT::GPT(GPTOptions options) : Model(options.name, "GPT"), options_(validated(error_prefix(), std::move(options))) {
  const GPTOptions& o = options_;
  const Initializer init = initializers::RandomNormal({.stddev = o.initializer_stddev});
  // Created in the order they run: that is the order of summary() and of the weight files.
  token_embedding_ = &add<layers::Embedding>(
      o.vocab_size, o.hidden_size, layers::EmbeddingOptions{.embeddings_initializer = init, .name = "token_embedding"});
  position_embedding_ = &add<PositionEmbedding>(
      o.max_length, PositionEmbeddingOptions{.initializer = init, .name = "position_embedding"});
  embeddings_dropout_ = &add<layers::Dropout>(o.dropout, layers::DropoutOptions{.name = "embeddings_dropout"});
  for (int i = 0; i < o.num_layers; ++i) {
    transformer_layers_.push_back(&add<layers::TransformerEncoder>(
        layers::TransformerEncoderOptions{.intermediate_dim = o.intermediate_size,
                                          .num_heads = o.num_heads,
                                          .dropout = o.dropout,
                                          .activation = o.hidden_act,
                                          .layer_norm_epsilon = o.layer_norm_epsilon,
                                          .kernel_initializer = init,
                                          .normalize_first = true,
                                          .name = "transformer_layer_" + std::to_string(i)}));
  }
  final_norm_ = &add<layers::LayerNormalization>(
      layers::LayerNormalizationOptions{.epsilon = o.layer_norm_epsilon, .name = "final_layer_norm"});
  // Zeros, not random draws: tie_weights() replaces the kernel with the token embedding anyway.
  lm_head_ = &add<LMHead>(o.vocab_size, LMHeadOptions{.kernel_initializer = "zeros", .name = "lm_head"});
}

void GPT::tie_weights() {
  if (token_embedding_->built() && lm_head_->built()) lm_head_->kernel().tie_to(token_embedding_->embeddings());
}

GPT::Unpacked GPT::unpack(const Inputs& inputs) const {
  const TokenInputs in = read_token_inputs(inputs, {"attention_mask"}, options_.max_length, error_prefix());
  return {in.input_ids, in.get("attention_mask")};
}

Tensor GPT::embed(const Tensor& input_ids, bool training) {
  Tensor h;
  try {
    h = (*token_embedding_)(input_ids, training);
  } catch (const IndexError& e) {
    throw IndexError(error_prefix() + "input_ids hold an id outside the vocabulary (vocab_size is " +
                     std::to_string(options_.vocab_size) +
                     "; build the model with GPTOptions{.vocab_size = "
                     "tokenizer.vocab_size()}): " +
                     e.what());
  }
  h = ops::add(h, (*position_embedding_)(h, training));
  return (*embeddings_dropout_)(h, training);
}

Tensor GPT::sequence_output(const Inputs& inputs, bool training) {
  const Unpacked in = unpack(inputs);
  Tensor h = embed(in.input_ids, training);
  for (layers::TransformerEncoder* block : transformer_layers_) {
    h = (*block)(h, {.attention_mask = in.attention_mask, .training = training, .use_causal_mask = true});
  }
  return (*final_norm_)(h, training);
}

Tensor GPT::logits(const Tensor& h) {
  if (!lm_head_->built()) {
    lm_head_->maybe_build(h.shape());
    tie_weights();  // before the first logits, which must already come from the token embedding
  }
  return (*lm_head_)(h);
}

Tensor GPT::call(const Inputs& inputs, bool training) { return logits(sequence_output(inputs, training)); }

void GPT::build(const Shape& input_shape) {
  if (built()) return;
  if (input_shape.rank() != 2) {
    throw ShapeError(error_prefix() + "build() takes the input_ids shape [batch, length], got " +
                     input_shape.to_string());
  }
  autodiff::NoGradScope no_grad;
  (*this)(Inputs{{"input_ids", Tensor::zeros(input_shape, DType::int64)}}, /*training=*/false);
}

}  // namespace kestrel::models
