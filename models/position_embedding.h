// PositionEmbedding: one learned vector per position, as keras_hub.layers.PositionEmbedding.
//
//   models::PositionEmbedding positions(/*sequence_length=*/128);
//   Tensor h = ops::add(tokens, positions(tokens));   // tokens [B,L,D] + positions [1,L,D]
//   positions.embeddings().name();                    // "position_embedding/embeddings", [128,D]
//
// The weight "embeddings" [sequence_length, D] is created by the first call, with D the input's
// last dim. A call on [B, L, D] returns the first L rows as [1, L, D], ready to broadcast over
// the batch: position vectors do not depend on the tokens, only on how many there are.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "framework/layers/initializers.h"
#include "framework/layers/layer.h"

namespace kestrel::models {

struct PositionEmbeddingOptions {
  Initializer initializer = "glorot_uniform";
  std::string name;
  /// The precision policy (unset: the parent's, else the global one; layers/dtype_policy.h).
  std::optional<DTypePolicy> dtype;
};

class PositionEmbedding : public Layer {
 public:
  /// Vectors for positions 0 .. sequence_length - 1 (sequence_length positive).
  explicit PositionEmbedding(std::int64_t sequence_length, PositionEmbeddingOptions options = {});

  /// Creates the table [sequence_length, input_shape[-1]].
  void build(const Shape& input_shape) override;
  /// x [B, L, D] with L <= sequence_length -> the position vectors [1, L, D].
  Tensor call(const Tensor& x, bool training) override;

  std::int64_t sequence_length() const { return sequence_length_; }
  /// The table [sequence_length, D]; undefined until built.
  const Variable& embeddings() const { return embeddings_; }

 private:
  std::int64_t sequence_length_;
  PositionEmbeddingOptions options_;
  Variable embeddings_;
};

}  // namespace kestrel::models
