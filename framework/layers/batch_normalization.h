// BatchNormalization, as keras.layers.BatchNormalization: each feature of `axis` normalized over
// the batch and every other axis.
//
//   layers::BatchNormalization norm;                       // axis -1: [N, C], NHWC [N, H, W, C]
//   Tensor y = norm(x, /*training=*/true);                 // the batch's statistics; moving ones updated
//   Tensor z = norm(x);                                    // inference: the moving statistics
//   layers::BatchNormalization nchw({.axis = 1});          // channels first, [N, C, H, W]
//   layers::BatchNormalization global({.synchronized = true});   // the global batch's statistics
//
// Training (training = true, and the layer trainable, as in Keras): y = (x - mean) / sqrt(var +
// epsilon) * gamma + beta with the batch's mean and biased variance, gradients flowing through
// them; then moving = moving * momentum + batch * (1 - momentum). Inference: the moving
// statistics. A batch's statistics count every row it has, the zero rows that pad fit's last
// partial batch (under jit_compile or a strategy) too. Whatever the policy computes in, the
// statistics and the arithmetic are float32 and the output comes back in the input's dtype
// (Keras opts batch normalization out of bfloat16).
//
// Weights (Keras 3 names and order): "gamma" [C] (ones) when scale, "beta" [C] (zeros) when
// center, then the non-trainable "moving_mean" [C] (zeros) and "moving_variance" [C] (ones).
//
// Under a strategy of several replicas, each replica normalizes its own shard. With synchronized
// (Keras 3 with TensorFlow), the statistics are the global batch's: every replica's sums of x and
// x^2 and its count, summed over the replicas with ops::cross_replica_sum, eagerly and in a
// compiled step, whose gradient sums the replicas' cotangents the same way. The moving statistics
// are one pair of variables the replicas share, updated once per step: synchronized, from the
// global statistics; otherwise from the mean of the replicas' statistics (TensorFlow's MEAN
// aggregation), so the moving mean follows the global batch's mean.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "framework/layers/initializers.h"
#include "framework/layers/layer.h"

namespace kestrel::layers {

struct BatchNormalizationOptions {
  /// The features' axis, normalized one by one (negative: from the end; 1 for channels first).
  int axis = -1;
  /// How much of the moving statistics each training step keeps, in [0, 1].
  double momentum = 0.99;
  double epsilon = 1e-3;
  bool center = true;  ///< add the learned offset beta
  bool scale = true;   ///< multiply by the learned gain gamma
  Initializer beta_initializer = "zeros";
  Initializer gamma_initializer = "ones";
  Initializer moving_mean_initializer = "zeros";
  Initializer moving_variance_initializer = "ones";
  /// Under a strategy of several replicas: the global batch's statistics, not each shard's.
  bool synchronized = false;
  std::string name;
  /// The precision policy (unset: the parent's, else the global one; layers/dtype_policy.h).
  std::optional<DTypePolicy> dtype;
};

class BatchNormalization : public Layer {
 public:
  explicit BatchNormalization(BatchNormalizationOptions options = {});

  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

  nlohmann::json get_config() const override;
  static BatchNormalization from_config(const nlohmann::json& config);

  const BatchNormalizationOptions& options() const { return options_; }
  /// The features' axis as a non-negative index; -1 until built.
  int axis() const { return axis_; }
  /// The gain [C]; undefined until built, or when scale is false.
  const Variable& gamma() const { return gamma_; }
  /// The offset [C]; undefined until built, or when center is false.
  const Variable& beta() const { return beta_; }
  /// The statistics inference normalizes with [C]; undefined until built.
  const Variable& moving_mean() const { return moving_mean_; }
  const Variable& moving_variance() const { return moving_variance_; }

 private:
  struct Moments {
    Tensor mean, variance;  // [C], float32
  };
  void check_input(const Tensor& x) const;
  /// This batch's statistics: the shard's, or the global batch's when synchronized.
  Moments batch_moments(const Tensor& x) const;
  Moments synchronized_moments(const Tensor& x) const;
  void update_moving_statistics(const Moments& batch);
  /// A [C] tensor shaped to broadcast along the features' axis of the input.
  Tensor along_axis(const Tensor& per_feature) const;

  BatchNormalizationOptions options_;
  int axis_ = -1;         // set by build
  int rank_ = 0;          // the inputs' rank, set by build
  std::int64_t dim_ = 0;  // the features' count C, set by build
  std::vector<int> reduction_axes_;
  Variable gamma_;
  Variable beta_;
  Variable moving_mean_;
  Variable moving_variance_;
};

}  // namespace kestrel::layers
