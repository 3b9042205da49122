// Window pooling layers over NHWC images, as keras.layers.MaxPooling2D and AveragePooling2D.
//
//   layers::MaxPooling2D pool;                                  // 2x2 windows, stride 2
//   Tensor y = pool(x);                                         // [N,26,26,32] -> [N,13,13,32]
//   layers::AveragePooling2D avg({.pool_size = {3, 3}, .strides = {1, 1}, .padding = "same"});
//
// Pooling over a whole sequence or image (GlobalAveragePooling2D and the rest) is in
// layers/global_pooling.h.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "framework/layers/conv2d.h"
#include "framework/layers/layer.h"

namespace kestrel::layers {

struct Pooling2DOptions {
  std::array<int, 2> pool_size{2, 2};
  std::array<int, 2> strides{0, 0};  ///< {0, 0}: equal to pool_size (Keras's strides=None)
  PaddingArg padding = "valid";
  std::string name;
  /// The precision policy (unset: the parent's, else the global one; layers/dtype_policy.h).
  std::optional<DTypePolicy> dtype;
};

class MaxPooling2D : public Layer {
 public:
  explicit MaxPooling2D(Pooling2DOptions options = {});
  /// The maximum of each window, per channel.
  Tensor call(const Tensor& x, bool training) override;
  const Pooling2DOptions& options() const { return options_; }

  nlohmann::json get_config() const override;
  static MaxPooling2D from_config(const nlohmann::json& config);

 private:
  Pooling2DOptions options_;
};

class AveragePooling2D : public Layer {
 public:
  explicit AveragePooling2D(Pooling2DOptions options = {});
  /// The mean of each window, per channel (with "same" padding, of its real elements only).
  Tensor call(const Tensor& x, bool training) override;
  const Pooling2DOptions& options() const { return options_; }

  nlohmann::json get_config() const override;
  static AveragePooling2D from_config(const nlohmann::json& config);

 private:
  Pooling2DOptions options_;
};

}  // namespace kestrel::layers
