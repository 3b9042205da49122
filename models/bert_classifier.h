// BertClassifier: a BERT-style Transformer encoder with a classification head, as a Model.
//
//   models::BertClassifier model({.vocab_size = tokenizer.vocab_size(), .num_classes = 3});
//   model.compile({.optimizer = optimizers::AdamW({.learning_rate = 1e-3}),
//                  .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
//                  .metrics = {"accuracy"}});
//   model.fit(Inputs{{"input_ids", ids}, {"attention_mask", mask}}, labels, {.epochs = 3});
//   Tensor logits = model(Inputs{{"input_ids", ids}});    // [B, num_classes]
//
// Inputs, by name (all [B, L], L <= max_length):
//   "input_ids"       int32 or int64 token ids in [0, vocab_size); required
//   "attention_mask"  1 = real token, 0 = padding (any dtype, nonzero = attend); absent = no padding
//   "token_type_ids"  segment ids in [0, type_vocab_size); absent = segment 0 everywhere
// A single unnamed tensor is taken as input_ids.
//
// The forward pass, as BERT (post-LN blocks):
//   h = embeddings_dropout(embeddings_layer_norm(token_embedding(ids) + position_embedding[:L]
//                                                (+ token_type_embedding(types))))
//   h = transformer_layer_i(h, attention_mask)             for i in [0, num_layers)
//   logits = logits(output_dropout(pooled_dense(h[:, 0])))  (pooled_dense: tanh, as BERT's pooler)
// Those are the layers' names, in summary() and in weight files. The defaults are the bench's
// BERT-tiny (1,478,530 parameters). Pretrained BERT checkpoints use type_vocab_size = 2.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "framework/layers/activations.h"
#include "framework/layers/dense.h"
#include "framework/layers/dropout.h"
#include "framework/layers/embedding.h"
#include "framework/layers/layer_normalization.h"
#include "framework/layers/transformer_encoder.h"
#include "framework/model/model.h"
#include "models/position_embedding.h"

namespace kestrel::models {

struct BertOptions {
  std::int64_t vocab_size = 8192;
  std::int64_t hidden_size = 128;
  int num_layers = 2;
  int num_heads = 2;                     ///< must divide hidden_size
  std::int64_t intermediate_size = 512;  ///< the feed-forward hidden size of each block
  ActivationFn hidden_act = "gelu";      ///< of the feed-forward hidden layer (exact erf gelu, as BERT)
  std::int64_t max_length = 128;         ///< the longest input: the number of position vectors
  double dropout = 0.1;                  ///< embeddings, attention probabilities, residual branches, head
  std::int64_t num_classes = 2;
  double initializer_stddev = 0.02;  ///< kernels and embeddings: truncated normal, as BERT
  std::int64_t type_vocab_size = 0;  ///< segments; 0 = no token_type_embedding (token_type_ids refused)
  bool use_pooler = true;            ///< tanh Dense on the [CLS] vector before the classifier
  double layer_norm_epsilon = 1e-12;
  std::string name;  ///< the model's name; "bert_classifier" (made unique) when empty
};

class BertClassifier : public Model {
 public:
  explicit BertClassifier(BertOptions options = {});

  /// Logits [B, num_classes] from the named inputs (see the top of this header).
  Tensor call(const Inputs& inputs, bool training) override;
  /// The encoder's output [B, L, hidden_size], before pooling: one vector per token.
  Tensor sequence_output(const Inputs& inputs, bool training = false);
  /// Builds the weights by running once on zero ids of input_shape [batch, length].
  void build(const Shape& input_shape) override;

  const BertOptions& options() const { return options_; }
  layers::Embedding& token_embedding() const { return *token_embedding_; }
  PositionEmbedding& position_embedding() const { return *position_embedding_; }
  /// Null when type_vocab_size is 0.
  layers::Embedding* token_type_embedding() const { return token_type_embedding_; }
  const std::vector<layers::TransformerEncoder*>& encoder_layers() const { return encoder_layers_; }
  /// Null when use_pooler is false.
  layers::Dense* pooler() const { return pooler_; }
  layers::Dense& classifier() const { return *logits_; }

 private:
  struct Unpacked {
    Tensor input_ids;
    Tensor attention_mask;  // undefined: attend everywhere
    Tensor token_type_ids;  // undefined: segment 0
  };
  /// Checks the inputs' names, dtypes and shapes against the options.
  Unpacked unpack(const Inputs& inputs) const;
  Tensor embed(const Unpacked& in, bool training);

  BertOptions options_;
  layers::Embedding* token_embedding_ = nullptr;
  PositionEmbedding* position_embedding_ = nullptr;
  layers::Embedding* token_type_embedding_ = nullptr;
  layers::LayerNormalization* embeddings_norm_ = nullptr;
  layers::Dropout* embeddings_dropout_ = nullptr;
  std::vector<layers::TransformerEncoder*> encoder_layers_;
  layers::Dense* pooler_ = nullptr;
  layers::Dropout* output_dropout_ = nullptr;
  layers::Dense* logits_ = nullptr;
};

}  // namespace kestrel::models
