// GPT: a GPT-2 style causal language model whose output projection is its input embedding.
//
//   models::GPT model({.vocab_size = tokenizer.vocab_size()});
//   models::CausalLmBatch data = models::causal_lm_batch(token_rows);     // see models/gpt_data.h
//   model.compile({.optimizer = optimizers::AdamW({.learning_rate = 1e-3, .weight_decay = 0.01}),
//                  .loss = losses::SparseCategoricalCrossentropy({.from_logits = true, .ignore_class = -100})});
//   model.fit(data.inputs, data.labels, {.batch_size = 16, .epochs = 3});
//   Tensor logits = model(data.inputs);                                  // [B, L, vocab_size]
//   Tensor text = model.generate(prompt_ids, {.max_new_tokens = 20, .top_k = 40, .seed = 7});
//
// Inputs, by name (all [B, L], L <= max_length):
//   "input_ids"       int32 or int64 token ids in [0, vocab_size); required
//   "attention_mask"  1 = real token, 0 = padding (any dtype, nonzero = attend); absent = no padding
// A single unnamed tensor is taken as input_ids. Position t only ever sees positions <= t, so with
// right padding (as causal_lm_batch makes) the mask changes nothing for real tokens; it matters
// for left-padded rows.
//
// The forward pass, as GPT-2 (pre-LN blocks):
//   h = embeddings_dropout(token_embedding(ids) + position_embedding[:L])
//   h = transformer_layer_i(h, attention_mask, causal)     for i in [0, num_layers)
//       (each: h + Attention(LN(h)), then h + FFN(LN(h)), as layers::TransformerEncoder with
//        normalize_first and use_causal_mask)
//   logits = lm_head(final_layer_norm(h))                   = h · token_embedding.embeddingsᵀ
// Those are the layers' names, in summary() and in weight files. The output projection lm_head
// (models/lm_head.h) is tied to the input embedding, as GPT-2's is: tie_weights() makes its kernel
// the token embedding's Variable (Variable::tie_to) once both are built, so two layers hold one
// variable. weights() lists it once, the optimizer keeps one set of slots for it, a weight file
// holds it once (under token_embedding), and a strategy placing the model checks the tie holds
// (layers/weight_ties.h). The defaults are the bench's GPT-tiny (5,289,472 parameters; the bench
// sets dropout = 0), with GPT-2's tanh-approximated GELU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "framework/layers/activations.h"
#include "framework/layers/dropout.h"
#include "framework/layers/embedding.h"
#include "framework/layers/layer_normalization.h"
#include "framework/layers/transformer_encoder.h"
#include "framework/model/model.h"
#include "models/lm_head.h"
#include "models/position_embedding.h"

namespace kestrel::models {

/// GELU with the tanh approximation, as GPT-2 (and keras_hub's GPT2Backbone) use it.
ActivationFn gelu_approximate();

struct GPTOptions {
  std::int64_t vocab_size = 8192;
  std::int64_t hidden_size = 256;
  int num_layers = 4;
  int num_heads = 4;                             ///< must divide hidden_size
  std::int64_t intermediate_size = 1024;         ///< the feed-forward hidden size of each block
  ActivationFn hidden_act = gelu_approximate();  ///< of the feed-forward hidden layer
  std::int64_t max_length = 128;                 ///< the longest sequence: the number of position vectors
  double dropout = 0.1;                          ///< embeddings, attention probabilities, residual branches
  double initializer_stddev = 0.02;              ///< embeddings and kernels: N(0, stddev); biases zero
  double layer_norm_epsilon = 1e-5;
  std::string name;  ///< the model's name; "gpt" (made unique) when empty
};

/// How generate() picks each new token.
struct GenerateOptions {
  std::int64_t max_new_tokens = 16;  ///< at most this many; fewer when the sequence reaches max_length
  int top_k = 0;                     ///< 0: greedy (argmax); k >= 1: sample among the k likeliest tokens
  double temperature = 1.0;          ///< divides the logits before sampling (top_k >= 1 only); positive
  std::uint64_t seed = 0;            ///< the same seed, prompt and weights give the same tokens
};

class GPT : public Model {
 public:
  explicit GPT(GPTOptions options = {});

  /// Next-token logits [B, L, vocab_size] from the named inputs (see the top of this header).
  Tensor call(const Inputs& inputs, bool training) override;
  /// The final layer norm's output [B, L, hidden_size]: what the tied projection turns into logits.
  Tensor sequence_output(const Inputs& inputs, bool training = false);
  /// Builds the weights by running once on zero ids of input_shape [batch, length].
  void build(const Shape& input_shape) override;
  /// Ties lm_head's kernel to the token embedding (once both are built; idempotent).
  void tie_weights() override;

  /// Continues each row of prompt_ids [B, P] (int32/int64, 1 <= P <= max_length, no padding: one
  /// length per call) and returns [B, P + n] in the prompt's dtype, n = min(max_new_tokens,
  /// max_length - P). Eager only: each step reads the logits on the host to choose a token, and
  /// reruns the whole sequence (there is no key/value cache).
  Tensor generate(const Tensor& prompt_ids, GenerateOptions options = {});

  const GPTOptions& options() const { return options_; }
  layers::Embedding& token_embedding() const { return *token_embedding_; }
  PositionEmbedding& position_embedding() const { return *position_embedding_; }
  const std::vector<layers::TransformerEncoder*>& transformer_layers() const { return transformer_layers_; }
  layers::LayerNormalization& final_layer_norm() const { return *final_norm_; }
  LMHead& lm_head() const { return *lm_head_; }
  /// The output projection [vocab_size, hidden_size]: lm_head's kernel, tied to the token embedding.
  const Variable& output_embeddings() const { return lm_head_->kernel(); }

 private:
  struct Unpacked {
    Tensor input_ids;
    Tensor attention_mask;  // undefined: attend to every earlier position
  };
  /// Checks the inputs' names, dtypes and shapes against the options.
  Unpacked unpack(const Inputs& inputs) const;
  /// Checks the prompt and the options given to generate().
  void check_generate(const Tensor& prompt_ids, const GenerateOptions& options) const;
  Tensor embed(const Tensor& input_ids, bool training);
  /// h [..., hidden_size] -> [..., vocab_size] through lm_head, tied before its first use.
  Tensor logits(const Tensor& h);

  GPTOptions options_;
  layers::Embedding* token_embedding_ = nullptr;
  PositionEmbedding* position_embedding_ = nullptr;
  layers::Dropout* embeddings_dropout_ = nullptr;
  std::vector<layers::TransformerEncoder*> transformer_layers_;
  layers::LayerNormalization* final_norm_ = nullptr;
  LMHead* lm_head_ = nullptr;
};

}  // namespace kestrel::models
