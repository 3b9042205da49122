#include "framework/layers/embedding.h"

#include <utility>

#include "framework/core/error.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::layers {
Embedding::Embedding(std::int64_t input_dim, std::int64_t output_dim, EmbeddingOptions options)
    : Layer("Embedding", options.name, options.dtype),
      input_dim_(input_dim),
      output_dim_(output_dim),
      options_(std::move(options)) {
  if (input_dim_ <= 0 || output_dim_ <= 0) {
    throw ValueError(error_prefix() + "input_dim is " + std::to_string(input_dim_) + " and output_dim is " +
                     std::to_string(output_dim_) + "; both must be positive");
  }
}

void Embedding::build(const Shape& input_shape) {
  embeddings_ = add_weight("embeddings", {input_dim_, output_dim_}, options_.embeddings_initializer);
}

const Variable& Embedding::embeddings() {
  maybe_build(Shape{});
  return embeddings_;
}

Tensor Embedding::call(const Tensor& ids, bool training) {
  if (ids.dtype() != DType::int32 && ids.dtype() != DType::int64) {
    throw TypeError(error_prefix() + "ids are " + ids.spec().to_string() +
                    "; Embedding takes int32 or int64 ids: convert them with ops::cast(ids, DType::int32)");
  }
  try {
    return ops::gather(embeddings_.value(), ids, 0);
  } catch (const IndexError& e) {
    throw IndexError(error_prefix() + e.what() + "; ids must be in [0, " + std::to_string(input_dim_) +
                     "): make input_dim at least the vocabulary size");
  }
}

}  // namespace kestrel::layers
