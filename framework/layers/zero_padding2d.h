// ZeroPadding2D, as keras.layers.ZeroPadding2D: adds rows and columns of zeros around NHWC images.
//
//   layers::ZeroPadding2D pad;                                  // 1 on every side: [N,28,28,C] -> [N,30,30,C]
//   layers::ZeroPadding2D rows_cols({.padding = {2, 1}});       // 2 above and below, 1 left and right
//   layers::ZeroPadding2D exact({.padding = {{0, 1}, {2, 3}}}); // {{top, bottom}, {left, right}}
#pragma once

#include <array>
#include <optional>
#include <string>

#include "framework/layers/layer.h"

namespace kestrel::layers {

/// The zeros to add on each side, in any of Keras's three forms: an int for every side, {height,
/// width} for each axis's two sides, or {{top, bottom}, {left, right}}.
class Padding2DArg {
 public:
  // NOLINTNEXTLINE(google-explicit-constructor): padding = 1, as Keras takes it
  Padding2DArg(int every_side) : Padding2DArg(every_side, every_side) {}
  Padding2DArg(int height, int width) : Padding2DArg({height, height}, {width, width}) {}
  Padding2DArg(std::array<int, 2> top_bottom, std::array<int, 2> left_right)
      : top_bottom_(top_bottom), left_right_(left_right) {}

  int top() const { return top_bottom_[0]; }
  int bottom() const { return top_bottom_[1]; }
  int left() const { return left_right_[0]; }
  int right() const { return left_right_[1]; }
  /// "{{top, bottom}, {left, right}}", as the numbers were given to the layer.
  std::string to_string() const;

 private:
  std::array<int, 2> top_bottom_;
  std::array<int, 2> left_right_;
};

struct ZeroPadding2DOptions {
  Padding2DArg padding = 1;
  std::string name;
  /// The precision policy (unset: the parent's, else the global one; layers/dtype_policy.h).
  std::optional<DTypePolicy> dtype;
};

class ZeroPadding2D : public Layer {
 public:
  explicit ZeroPadding2D(ZeroPadding2DOptions options = {});
  /// x [N, H, W, C] -> [N, top + H + bottom, left + W + right, C], zeros around x.
  Tensor call(const Tensor& x, bool training) override;
  const ZeroPadding2DOptions& options() const { return options_; }

  nlohmann::json get_config() const override;
  static ZeroPadding2D from_config(const nlohmann::json& config);

 private:
  ZeroPadding2DOptions options_;
};

}  // namespace kestrel::layers
