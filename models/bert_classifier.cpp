#include "models/bert_classifier.h"

#include <utility>

#include "framework/autodiff/recording.h"
#include "framework/core/error.h"
#include "framework/ops/ops.h"
#include "models/token_inputs.h"
#include "models/transformer_sizes.h"

namespace kestrel::models {
namespace {

BertOptions validated(const std::string& prefix, BertOptions o) {
  check_transformer_sizes(prefix, sizes_of(o));
  if (o.num_classes <= 0) {
    throw ValueError(prefix + "num_classes is " + std::to_string(o.num_classes) + "; it must be positive");
  }
  if (o.type_vocab_size < 0) {
    throw ValueError(prefix + "type_vocab_size is " + std::to_string(o.type_vocab_size) +
                     "; use 0 (no segments) or the number of segments (2 for BERT)");
  }
  return o;
}

}  // namespace

BertClassifier::BertClassifier(BertOptions options)
    : Model(options.name, "BertClassifier"), options_(validated(error_prefix(), std::move(options))) {
  const BertOptions& o = options_;
  const Initializer init = initializers::TruncatedNormal({.stddev = o.initializer_stddev});
  // Created in the order they run: that is the order of summary() and of the weight files.
  token_embedding_ = &add<layers::Embedding>(
      o.vocab_size, o.hidden_size, layers::EmbeddingOptions{.embeddings_initializer = init, .name = "token_embedding"});
  position_embedding_ = &add<PositionEmbedding>(
      o.max_length, PositionEmbeddingOptions{.initializer = init, .name = "position_embedding"});
  if (o.type_vocab_size > 0) {
    token_type_embedding_ = &add<layers::Embedding>(
        o.type_vocab_size, o.hidden_size,
        layers::EmbeddingOptions{.embeddings_initializer = init, .name = "token_type_embedding"});
  }
  embeddings_norm_ = &add<layers::LayerNormalization>(
      layers::LayerNormalizationOptions{.epsilon = o.layer_norm_epsilon, .name = "embeddings_layer_norm"});
  embeddings_dropout_ = &add<layers::Dropout>(o.dropout, layers::DropoutOptions{.name = "embeddings_dropout"});
  for (int i = 0; i < o.num_layers; ++i) {
    encoder_layers_.push_back(&add<layers::TransformerEncoder>(
        layers::TransformerEncoderOptions{.intermediate_dim = o.intermediate_size,
                                          .num_heads = o.num_heads,
                                          .dropout = o.dropout,
                                          .activation = o.hidden_act,
                                          .layer_norm_epsilon = o.layer_norm_epsilon,
                                          .kernel_initializer = init,
                                          .name = "transformer_layer_" + std::to_string(i)}));
  }
  if (o.use_pooler) {
    pooler_ = &add<layers::Dense>(
        o.hidden_size, layers::DenseOptions{.activation = "tanh", .kernel_initializer = init, .name = "pooled_dense"});
  }
  output_dropout_ = &add<layers::Dropout>(o.dropout, layers::DropoutOptions{.name = "output_dropout"});
  logits_ = &add<layers::Dense>(o.num_classes, layers::DenseOptions{.kernel_initializer = init, .name = "logits"});
}

BertClassifier::Unpacked BertClassifier::unpack(const Inputs& inputs) const {
  const TokenInputs read =
      read_token_inputs(inputs, {"attention_mask", "token_type_ids"}, options_.max_length, error_prefix());
  const Unpacked in{read.input_ids, read.get("attention_mask"), read.get("token_type_ids")};
  if (in.token_type_ids.defined() && token_type_embedding_ == nullptr) {
    throw ValueError(error_prefix() +
                     "got token_type_ids but type_vocab_size is 0, so the model has no segment "
                     "embeddings; build it with BertOptions{.type_vocab_size = 2} or leave token_type_ids out");
  }
  return in;
}

Tensor BertClassifier::embed(const Unpacked& in, bool training) {
  Tensor h;
  try {
    h = (*token_embedding_)(in.input_ids, training);
  } catch (const IndexError& e) {
    throw IndexError(error_prefix() + "input_ids hold an id outside the vocabulary (vocab_size is " +
                     std::to_string(options_.vocab_size) +
                     "; build the model with BertOptions{.vocab_size = "
                     "tokenizer.vocab_size()}): " +
                     e.what());
  }
  h = ops::add(h, (*position_embedding_)(h, training));
  if (token_type_embedding_ != nullptr) {
    // Absent segment ids mean one segment, as BERT treats them: row 0 is still added.
    const Tensor types =
        in.token_type_ids.defined() ? in.token_type_ids : Tensor::zeros(in.input_ids.shape(), DType::int64);
    h = ops::add(h, (*token_type_embedding_)(types, training));
  }
  return (*embeddings_dropout_)((*embeddings_norm_)(h, training), training);
}

Tensor BertClassifier::sequence_output(const Inputs& inputs, bool training) {
  const Unpacked in = unpack(inputs);
  Tensor h = embed(in, training);
  for (layers::TransformerEncoder* block : encoder_layers_) {
    h = (*block)(h, {.attention_mask = in.attention_mask, .training = training});
  }
  return h;
}

Tensor BertClassifier::call(const Inputs& inputs, bool training) {
  Tensor h = sequence_output(inputs, training);
  const std::int64_t batch = h.shape()[0];
  const std::int64_t hidden = h.shape()[2];
  // The first token ([CLS]) stands for the sequence; it is never padding.
  Tensor pooled = ops::reshape(ops::slice(h, {0, 0, 0}, {batch, 1, hidden}), {batch, hidden});
  if (pooler_ != nullptr) pooled = (*pooler_)(pooled, training);
  return (*logits_)((*output_dropout_)(pooled, training), training);
}

void BertClassifier::build(const Shape& input_shape) {
  if (built()) return;
  if (input_shape.rank() != 2) {
    throw ShapeError(error_prefix() + "build() takes the input_ids shape [batch, length], got " +
                     input_shape.to_string());
  }
  autodiff::NoGradScope no_grad;
  (*this)(Inputs{{"input_ids", Tensor::zeros(input_shape, DType::int64)}}, /*training=*/false);
}

}  // namespace kestrel::models
