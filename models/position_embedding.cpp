#include "models/position_embedding.h"

#include <utility>

#include "framework/core/error.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::models {

PositionEmbedding::PositionEmbedding(std::int64_t sequence_length, PositionEmbeddingOptions options)
    : Layer("PositionEmbedding", options.name, options.dtype),
      sequence_length_(sequence_length),
      options_(std::move(options)) {
  if (sequence_length_ <= 0) {
    throw ValueError(error_prefix() + "sequence_length is " + std::to_string(sequence_length_) +
                     "; it must be positive (the longest input the layer will see)");
  }
}

void PositionEmbedding::build(const Shape& input_shape) {
  if (input_shape.rank() != 3) {
    throw ShapeError(error_prefix() + "input is " + input_shape.to_string() +
                     "; PositionEmbedding takes [batch, positions, features] (embed token ids first)");
  }
  embeddings_ = add_weight("embeddings", {sequence_length_, input_shape[-1]}, options_.initializer);
}

Tensor PositionEmbedding::call(const Tensor& x, bool training) {
  const Shape& table = embeddings_.shape();
  if (x.rank() != 3 || x.shape()[-1] != table[1]) {
    throw ShapeError(error_prefix() + "input is " + x.shape().to_string() + " but the layer was built for " +
                     std::to_string(table[1]) + " features; feed [batch, positions, " + std::to_string(table[1]) + "]");
  }
  const std::int64_t length = x.shape()[1];
  if (length > sequence_length_) {
    throw ShapeError(error_prefix() + "input has " + std::to_string(length) + " positions but the layer holds " +
                     std::to_string(sequence_length_) + "; truncate inputs to " + std::to_string(sequence_length_) +
                     " tokens or create the layer with a larger sequence_length");
  }
  // A slice, not a gather: positions are always 0..L-1, so no index tensor is needed.
  return ops::reshape(ops::slice(embeddings_.value(), {0, 0}, {length, table[1]}), {1, length, table[1]});
}

}  // namespace kestrel::models
