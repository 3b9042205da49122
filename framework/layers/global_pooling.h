// Global pooling layers, as keras.layers.GlobalAveragePooling1D, GlobalMaxPooling1D,
// GlobalAveragePooling2D and GlobalMaxPooling2D: one value per channel, over every step of a
// sequence [batch, steps, channels] or every position of an NHWC image.
//
//   layers::GlobalAveragePooling1D gap1;                     // [N,100,64] -> [N,64]
//   layers::GlobalMaxPooling2D gmp;                          // [N,7,7,64] -> [N,64]
//   layers::GlobalAveragePooling2D keep({.keepdims = true}); // [N,7,7,64] -> [N,1,1,64]
//
// Channels come last (Keras's data_format="channels_last"), as in Conv1D and Conv2D.
#pragma once

#include <optional>
#include <string>

#include "framework/layers/layer.h"

namespace kestrel::layers {

struct GlobalPoolingOptions {
  bool keepdims = false;  ///< true: the pooled axes stay, with size 1 ([N,1,C] or [N,1,1,C])
  std::string name;
  /// The precision policy (unset: the parent's, else the global one; layers/dtype_policy.h).
  std::optional<DTypePolicy> dtype;
};

class GlobalAveragePooling1D : public Layer {
 public:
  explicit GlobalAveragePooling1D(GlobalPoolingOptions options = {});
  /// The mean over the steps of x [N, steps, C], per channel.
  Tensor call(const Tensor& x, bool training) override;
  const GlobalPoolingOptions& options() const { return options_; }

  nlohmann::json get_config() const override;
  static GlobalAveragePooling1D from_config(const nlohmann::json& config);

 private:
  GlobalPoolingOptions options_;
};

class GlobalMaxPooling1D : public Layer {
 public:
  explicit GlobalMaxPooling1D(GlobalPoolingOptions options = {});
  /// The maximum over the steps of x [N, steps, C], per channel.
  Tensor call(const Tensor& x, bool training) override;
  const GlobalPoolingOptions& options() const { return options_; }

  nlohmann::json get_config() const override;
  static GlobalMaxPooling1D from_config(const nlohmann::json& config);

 private:
  GlobalPoolingOptions options_;
};

class GlobalAveragePooling2D : public Layer {
 public:
  explicit GlobalAveragePooling2D(GlobalPoolingOptions options = {});
  /// The mean over height and width of x [N, H, W, C], per channel.
  Tensor call(const Tensor& x, bool training) override;
  const GlobalPoolingOptions& options() const { return options_; }

  nlohmann::json get_config() const override;
  static GlobalAveragePooling2D from_config(const nlohmann::json& config);

 private:
  GlobalPoolingOptions options_;
};

class GlobalMaxPooling2D : public Layer {
 public:
  explicit GlobalMaxPooling2D(GlobalPoolingOptions options = {});
  /// The maximum over height and width of x [N, H, W, C], per channel.
  Tensor call(const Tensor& x, bool training) override;
  const GlobalPoolingOptions& options() const { return options_; }

  nlohmann::json get_config() const override;
  static GlobalMaxPooling2D from_config(const nlohmann::json& config);

 private:
  GlobalPoolingOptions options_;
};

}  // namespace kestrel::layers
