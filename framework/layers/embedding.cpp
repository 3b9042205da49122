#include "framework/layers/embedding.h"

#include <string>
#include <utility>

#include "framework/core/error.h"
#include "framework/layers/serialization.h"
#include "framework/ops/elementwise.h"
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
    // The rows are gathered from the table as stored and cast after, as Keras's Embedding does (it
    // turns autocast off): casting the whole table to the compute dtype would cost two passes over
    // input_dim rows a step (the cast, and its gradient's), where a batch reads a few rows, and the
    // gradient's repeated rows would be summed into a bfloat16 table. The variable itself stays
    // autocast, so an output projection tied to it still reads it in its compute dtype.
    const Tensor rows = ops::gather(embeddings_.stored_value(), ids, 0);
    return ops::cast(rows, dtype_policy().compute_dtype());
  } catch (const IndexError& e) {
    throw IndexError(error_prefix() + e.what() + "; ids must be in [0, " + std::to_string(input_dim_) +
                     "): make input_dim at least the vocabulary size");
  }
}

nlohmann::json Embedding::get_config() const {
  using namespace serialization;  // NOLINT(google-build-using-namespace): the config helpers read as Keras's
  nlohmann::json config = Layer::get_config();
  config["input_dim"] = input_dim_;
  config["output_dim"] = output_dim_;
  config["embeddings_initializer"] = to_config(options_.embeddings_initializer);
  put_null(config, {"embeddings_regularizer", "activity_regularizer", "embeddings_constraint"});
  config["mask_zero"] = false;
  return config;
}

Embedding Embedding::from_config(const nlohmann::json& config) {
  using namespace serialization;  // NOLINT(google-build-using-namespace): the config helpers read as Keras's
  const std::string what = "layer class 'Embedding'";
  LayerBase base = layer_base_from_config(config, what);
  check_null(config,
             {"embeddings_regularizer", "activity_regularizer", "embeddings_constraint", "lora_rank", "lora_alpha",
              "quantization_config"},
             what);
  check_unsupported(config, "mask_zero", false, what,
                    "Kestrel's layers take no Keras masks: set 'mask_zero' to false and pass a padding mask to "
                    "the attention layers instead");
  return Embedding(required<std::int64_t>(config, "input_dim", what),
                   required<std::int64_t>(config, "output_dim", what),
                   {.embeddings_initializer = config.contains("embeddings_initializer")
                                                  ? initializer_from_config(config.at("embeddings_initializer"), what)
                                                  : EmbeddingOptions{}.embeddings_initializer,
                    .name = std::move(base.name),
                    .dtype = base.dtype});
}

}  // namespace kestrel::layers
