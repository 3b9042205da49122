// Permute, as keras.layers.Permute: reorders the axes of each sample, keeping the batch dim first.
//
//   layers::Permute swap({2, 1});               // [N,10,64] -> [N,64,10]
//   layers::Permute to_channels_last({2, 3, 1}); // [N,C,H,W] -> [N,H,W,C]
//
// dims numbers the axes after the batch dim from 1, as in Keras, and must be a permutation of
// 1..rank-1 for inputs of that rank.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "framework/layers/layer.h"

namespace kestrel::layers {

struct PermuteOptions {
  std::string name;
  /// The precision policy (unset: the parent's, else the global one; layers/dtype_policy.h).
  std::optional<DTypePolicy> dtype;
};

class Permute : public Layer {
 public:
  /// dims: output axis i (from 1) is input axis dims[i-1].
  explicit Permute(std::vector<int> dims, PermuteOptions options = {});
  /// x [N, d1, ..., dk] -> [N, d_dims[0], ..., d_dims[k-1]].
  Tensor call(const Tensor& x, bool training) override;

  nlohmann::json get_config() const override;
  static Permute from_config(const nlohmann::json& config);

  const std::vector<int>& dims() const { return dims_; }

 private:
  std::vector<int> dims_;
};

}  // namespace kestrel::layers
