// Embedding: a lookup table from integer ids to vectors, as keras.layers.Embedding.
//
//   layers::Embedding embed(30522, 128);
//   Tensor h = embed(input_ids);          // int32/int64 [B,T] -> float32 [B,T,128]
//   embed.embeddings().name();            // "embedding/embeddings", shape [30522,128]
//   Tensor logits = ops::matmul(h, embed.embeddings().value(), {.transpose_b = true});  // tied output
//
// The weight "embeddings" [input_dim, output_dim] is initialized uniformly in [-0.05, 0.05), as in
// Keras. Ids outside [0, input_dim) throw IndexError. Under a mixed policy the table stays in its
// variable dtype and the rows looked up are cast to the compute dtype, as Keras's Embedding does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "framework/layers/initializers.h"
#include "framework/layers/layer.h"

namespace kestrel::layers {

struct EmbeddingOptions {
  Initializer embeddings_initializer = initializers::RandomUniform({.minval = -0.05, .maxval = 0.05});
  std::string name;
  /// The precision policy (unset: the parent's, else the global one; layers/dtype_policy.h).
  std::optional<DTypePolicy> dtype;
};

class Embedding : public Layer {
 public:
  /// A table of input_dim vectors of size output_dim (both positive).
  Embedding(std::int64_t input_dim, std::int64_t output_dim, EmbeddingOptions options = {});

  /// Creates the table; its shape does not depend on the ids' shape.
  void build(const Shape& input_shape) override;
  /// ids [...] (int32/int64) -> [..., output_dim].
  Tensor call(const Tensor& ids, bool training) override;

  nlohmann::json get_config() const override;
  static Embedding from_config(const nlohmann::json& config);

  std::int64_t input_dim() const { return input_dim_; }
  std::int64_t output_dim() const { return output_dim_; }
  /// The table [input_dim, output_dim], built on first use, so an output projection can tie to it
  /// before the layer has been called.
  const Variable& embeddings();

 private:
  std::int64_t input_dim_;
  std::int64_t output_dim_;
  EmbeddingOptions options_;
  Variable embeddings_;
};

}  // namespace kestrel::layers
