// UpSampling2D, as keras.layers.UpSampling2D: enlarges NHWC images by whole factors, repeating
// each row size[0] times and each column size[1] times ("nearest" interpolation).
//
//   layers::UpSampling2D up;                                  // [N,14,14,C] -> [N,28,28,C]
//   layers::UpSampling2D wide({.size = {1, 3}});              // [N,4,5,C] -> [N,4,15,C]
//
// Keras also offers "bilinear", "bicubic", "lanczos3" and "lanczos5"; Kestrel has "nearest" only,
// and any other interpolation throws ValueError.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "framework/layers/layer.h"

namespace kestrel::layers {

struct UpSampling2DOptions {
  std::array<int, 2> size{2, 2};  ///< {rows, columns} factors
  std::string interpolation = "nearest";
  std::string name;
  /// The precision policy (unset: the parent's, else the global one; layers/dtype_policy.h).
  std::optional<DTypePolicy> dtype;
};

class UpSampling2D : public Layer {
 public:
  explicit UpSampling2D(UpSampling2DOptions options = {});
  /// x [N, H, W, C] -> [N, H * size[0], W * size[1], C].
  Tensor call(const Tensor& x, bool training) override;
  const UpSampling2DOptions& options() const { return options_; }

  nlohmann::json get_config() const override;
  static UpSampling2D from_config(const nlohmann::json& config);

 private:
  UpSampling2DOptions options_;
};

}  // namespace kestrel::layers
