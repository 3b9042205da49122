// LayerNormalization over the last axis, as keras.layers.LayerNormalization.
//
//   layers::LayerNormalization norm({.epsilon = 1e-12});
//   Tensor y = norm(x);                    // (x - mean) / sqrt(var + eps) * gamma + beta
//   norm.gamma().name();                   // "layer_normalization/gamma", shape [D]
//
// Weights (Keras 3 names and order): "gamma" [D] (ones) when scale, then "beta" [D] (zeros) when
// center.
#pragma once

#include <optional>
#include <string>

#include "framework/layers/initializers.h"
#include "framework/layers/layer.h"

namespace kestrel::layers {

struct LayerNormalizationOptions {
  double epsilon = 1e-3;
  bool center = true;  ///< add the learned offset beta
  bool scale = true;   ///< multiply by the learned gain gamma
  Initializer beta_initializer = "zeros";
  Initializer gamma_initializer = "ones";
  std::string name;
  /// The precision policy (unset: the parent's, else the global one; layers/dtype_policy.h).
  std::optional<DTypePolicy> dtype;
};

class LayerNormalization : public Layer {
 public:
  explicit LayerNormalization(LayerNormalizationOptions options = {});

  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

  nlohmann::json get_config() const override;
  static LayerNormalization from_config(const nlohmann::json& config);

  const LayerNormalizationOptions& options() const { return options_; }
  /// The gain [D]; undefined until built, or when scale is false.
  const Variable& gamma() const { return gamma_; }
  /// The offset [D]; undefined until built, or when center is false.
  const Variable& beta() const { return beta_; }

 private:
  LayerNormalizationOptions options_;
  std::int64_t dim_ = 0;  // the normalized (last) dim, set by build
  Variable gamma_;
  Variable beta_;
  Tensor fixed_gamma_;  // ones, when scale is false
  Tensor fixed_beta_;   // zeros, when center is false
};

}  // namespace kestrel::layers
