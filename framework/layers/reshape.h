// Reshape, as keras.layers.Reshape: gives each sample a new shape, keeping the batch dim.
//
//   layers::Reshape to_image({28, 28, 1});      // [N,784] -> [N,28,28,1]
//   layers::Reshape to_tokens({-1, 64});        // [N,8,8,64] -> [N,64,64]: one -1 is inferred
//
// target_shape leaves out the batch dim, as in Keras. A target whose size differs from the
// sample's throws ShapeError with both shapes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "framework/layers/layer.h"

namespace kestrel::layers {

struct ReshapeOptions {
  std::string name;
  /// The precision policy (unset: the parent's, else the global one; layers/dtype_policy.h).
  std::optional<DTypePolicy> dtype;
};

class Reshape : public Layer {
 public:
  /// Each entry positive, except at most one -1 (the size left over).
  explicit Reshape(std::vector<std::int64_t> target_shape, ReshapeOptions options = {});
  /// x [N, ...] -> [N, target_shape...], sharing x's data.
  Tensor call(const Tensor& x, bool training) override;

  nlohmann::json get_config() const override;
  static Reshape from_config(const nlohmann::json& config);

  const std::vector<std::int64_t>& target_shape() const { return target_shape_; }

 private:
  std::vector<std::int64_t> target_shape_;
};

}  // namespace kestrel::layers
