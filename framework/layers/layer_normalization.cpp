#include "framework/layers/layer_normalization.h"

#include <sstream>
#include <string>
#include <utility>

#include "framework/core/error.h"
#include "framework/layers/serialization.h"
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

nlohmann::json LayerNormalization::get_config() const {
  using namespace serialization;  // NOLINT(google-build-using-namespace): the config helpers read as Keras's
  nlohmann::json config = Layer::get_config();
  config["axis"] = -1;
  config["epsilon"] = options_.epsilon;
  config["center"] = options_.center;
  config["scale"] = options_.scale;
  config["rms_scaling"] = false;
  config["beta_initializer"] = to_config(options_.beta_initializer);
  config["gamma_initializer"] = to_config(options_.gamma_initializer);
  put_null(config, {"beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint"});
  return config;
}

LayerNormalization LayerNormalization::from_config(const nlohmann::json& config) {
  using namespace serialization;  // NOLINT(google-build-using-namespace): the config helpers read as Keras's
  const std::string what = "layer class 'LayerNormalization'";
  LayerBase base = layer_base_from_config(config, what);
  // Keras writes the axis as given: -1 or [-1] both mean the last axis.
  if (config.value("axis", nlohmann::json(-1)) != nlohmann::json::array({-1})) {
    check_unsupported(config, "axis", -1, what,
                      "Kestrel's LayerNormalization normalizes over the last axis only: set 'axis' to -1");
  }
  check_unsupported(config, "rms_scaling", false, what,
                    "Kestrel's LayerNormalization subtracts the mean: set 'rms_scaling' to false");
  check_null(config,
             {"beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint", "activity_regularizer"},
             what);
  return LayerNormalization({.epsilon = optional<double>(config, "epsilon", 1e-3, what),
                             .center = optional<bool>(config, "center", true, what),
                             .scale = optional<bool>(config, "scale", true, what),
                             .beta_initializer = config.contains("beta_initializer")
                                                     ? initializer_from_config(config.at("beta_initializer"), what)
                                                     : Initializer("zeros"),
                             .gamma_initializer = config.contains("gamma_initializer")
                                                      ? initializer_from_config(config.at("gamma_initializer"), what)
                                                      : Initializer("ones"),
                             .name = std::move(base.name),
                             .dtype = base.dtype});
}

}  // namespace kestrel::layers
