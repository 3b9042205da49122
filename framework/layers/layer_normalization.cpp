#include "framework/layers/layer_normalization.h"

#include <sstream>
#include <utility>

#include "framework/core/error.h"
#include "framework/ops/ops.h"

namespace kestrel::layers {
LayerNormalization::LayerNormalization(LayerNormalizationOptions options)
    : Layer("LayerNormalization", options.name, options.dtype), options_(std::move(options)) {
  if (!(options_.epsilon > 0.0)) {
    std::ostringstream eps;
    eps << options_.epsilon;
    throw ValueError(error_prefix() + "epsilon is " + eps.str() +
                     "; it must be positive (Keras uses 1e-3, BERT 1e-12)");
  }
}

void LayerNormalization::build(const Shape& input_shape) {
  if (input_shape.rank() < 1) {
    throw ShapeError(error_prefix() +
                     "input is a scalar; LayerNormalization normalizes over the last axis of [..., D]");
  }
  dim_ = input_shape[-1];
  // Read as stored, never cast to the compute dtype: under mixed_bfloat16 the statistics, the gain
  // and the offset stay float32 (ops::layer_norm computes in float32 and returns x's dtype).
  if (options_.scale) gamma_ = add_weight("gamma", {dim_}, options_.gamma_initializer, {.autocast = false});
  if (options_.center) beta_ = add_weight("beta", {dim_}, options_.beta_initializer, {.autocast = false});
  // ops::layer_norm always applies a gain and an offset; a disabled one is the constant 1 or 0.
  if (!options_.scale) fixed_gamma_ = Tensor::ones({dim_});
  if (!options_.center) fixed_beta_ = Tensor::zeros({dim_});
}

Tensor LayerNormalization::call(const Tensor& x, bool training) {
  if (x.rank() < 1 || x.shape()[-1] != dim_) {
    throw ShapeError(error_prefix() + "input is " + x.shape().to_string() + " but the layer was built for last dim " +
                     std::to_string(dim_) + "; feed [..., " + std::to_string(dim_) + "] inputs, or use a new layer");
  }
  Tensor gamma = gamma_.defined() ? gamma_.value() : fixed_gamma_;
  Tensor beta = beta_.defined() ? beta_.value() : fixed_beta_;
  return ops::layer_norm(x, gamma, beta, {.epsilon = options_.epsilon});
}

}  // namespace kestrel::layers
