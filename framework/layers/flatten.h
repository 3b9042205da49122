// Flatten, as keras.layers.Flatten: keeps the batch dim and joins the rest.
//
//   layers::Flatten flatten;
//   Tensor y = flatten(x);                 // [128,5,5,64] -> [128,1600]; [8] -> [8,1]
#pragma once

#include <optional>
#include <string>

#include "framework/layers/layer.h"

namespace kestrel::layers {

struct FlattenOptions {
  std::string name;
  /// The precision policy (unset: the parent's, else the global one; layers/dtype_policy.h).
  std::optional<DTypePolicy> dtype;
};

class Flatten : public Layer {
 public:
  explicit Flatten(FlattenOptions options = {});
  Tensor call(const Tensor& x, bool training) override;

  nlohmann::json get_config() const override;
  static Flatten from_config(const nlohmann::json& config);
};

}  // namespace kestrel::layers
