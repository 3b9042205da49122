#include "framework/layers/batch_normalization.h"

#include <sstream>
#include <string>
#include <utility>

#include "framework/autodiff/recording.h"
#include "framework/core/error.h"
#include "framework/distribute/merge_call.h"
#include "framework/distribute/replica_context.h"
#include "framework/layers/serialization.h"
#include "framework/ops/collective.h"
#include "framework/ops/ops.h"

namespace kestrel::layers {
namespace {

std::string number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

Tensor as_float32(const Tensor& x) { return x.dtype() == DType::float32 ? x : ops::cast(x, DType::float32); }

// Elements [begin, begin + size) of a rank-1 tensor.
Tensor part(const Tensor& x, std::int64_t begin, std::int64_t size) { return ops::slice(x, {begin}, {size}); }

}  // namespace

BatchNormalization::BatchNormalization(BatchNormalizationOptions options)
    : Layer("BatchNormalization", options.name, options.dtype), options_(std::move(options)) {
  if (!(options_.momentum >= 0.0 && options_.momentum <= 1.0)) {
    throw ValueError(error_prefix() + "momentum is " + number(options_.momentum) +
                     "; it must be in [0, 1], the share of the moving statistics each step keeps (Keras uses 0.99)");
  }
  if (!(options_.epsilon > 0.0)) {
    throw ValueError(error_prefix() + "epsilon is " + number(options_.epsilon) +
                     "; it must be positive (Keras uses 1e-3)");
  }
}

void BatchNormalization::build(const Shape& input_shape) {
  const int rank = input_shape.rank();
  if (options_.axis < -rank || options_.axis >= rank) {
    throw ValueError(error_prefix() + "axis " + std::to_string(options_.axis) + " is out of range for input " +
                     input_shape.to_string() + " of rank " + std::to_string(rank) + "; use an axis in [" +
                     std::to_string(-rank) + ", " + std::to_string(rank) + "), e.g. -1 for channels last, 1 for " +
                     "channels first");
  }
  rank_ = rank;
  axis_ = options_.axis < 0 ? options_.axis + rank : options_.axis;
  dim_ = input_shape[axis_];
  reduction_axes_.clear();
  for (int a = 0; a < rank; ++a) {
    if (a != axis_) reduction_axes_.push_back(a);
  }
  // Read as stored, never cast to the compute dtype (Keras's autocast=False): the layer computes
  // in float32 whatever its policy computes in.
  const Shape shape{dim_};
  if (options_.scale) gamma_ = add_weight("gamma", shape, options_.gamma_initializer, {.autocast = false});
  if (options_.center) beta_ = add_weight("beta", shape, options_.beta_initializer, {.autocast = false});
  moving_mean_ =
      add_weight("moving_mean", shape, options_.moving_mean_initializer, {.trainable = false, .autocast = false});
  moving_variance_ = add_weight("moving_variance", shape, options_.moving_variance_initializer,
                                {.trainable = false, .autocast = false});
}

void BatchNormalization::check_input(const Tensor& x) const {
  if (x.rank() != rank_ || x.shape()[axis_] != dim_) {
    throw ShapeError(error_prefix() + "input is " + x.shape().to_string() + " but the layer was built for rank-" +
                     std::to_string(rank_) + " inputs with " + std::to_string(dim_) + " features on axis " +
                     std::to_string(axis_) + "; feed such inputs, or use a new layer");
  }
}

Tensor BatchNormalization::along_axis(const Tensor& per_feature) const {
  std::vector<std::int64_t> shape(static_cast<std::size_t>(rank_), 1);
  shape[static_cast<std::size_t>(axis_)] = dim_;
  return ops::reshape(per_feature, shape);
}

Tensor BatchNormalization::call(const Tensor& x, bool training) {
  check_input(x);
  // Keras opts batch normalization out of bfloat16 (its statistics overflow and lose precision):
  // statistics and arithmetic in float32, the output back in the input's dtype.
  const Tensor x32 = as_float32(x);
  Moments moments;
  if (training && trainable()) {
    moments = batch_moments(x32);
    update_moving_statistics(moments);
  } else {
    moments = {as_float32(moving_mean_.value()), as_float32(moving_variance_.value())};
  }
  Tensor inverse_std = ops::rsqrt(moments.variance + options_.epsilon);
  if (gamma_.defined()) inverse_std = inverse_std * as_float32(gamma_.value());
  // (x - mean) * scale rather than x * scale - mean * scale: no cancellation when the mean is
  // large beside the spread.
  Tensor y = (x32 - along_axis(moments.mean)) * along_axis(inverse_std);
  if (beta_.defined()) y = y + along_axis(as_float32(beta_.value()));
  const DType out = is_floating(x.dtype()) ? x.dtype() : DType::float32;
  return out == DType::float32 ? y : ops::cast(y, out);
}

BatchNormalization::Moments BatchNormalization::batch_moments(const Tensor& x) const {
  if (options_.synchronized) return synchronized_moments(x);
  const Tensor mean = ops::mean(x, {.axes = reduction_axes_});
  const Tensor variance = ops::mean(ops::square(x - along_axis(mean)), {.axes = reduction_axes_});
  return {mean, variance};
}

// Keras's synchronized moments (TensorFlow's _compute_moments_sync): the sums of x and x^2 and
// the count, summed over the replicas in sync, then mean = sum / count and variance =
// max(E[x^2] - mean^2, 0). The same arithmetic with one replica, so one replica and N replicas on
// the same global batch differ only in the order of the sums. One collective carries all three.
BatchNormalization::Moments BatchNormalization::synchronized_moments(const Tensor& x) const {
  const double count = static_cast<double>(x.numel() / dim_);
  Tensor sums = ops::concat({ops::sum(x, {.axes = reduction_axes_}),
                             ops::sum(ops::square(x), {.axes = reduction_axes_}), Tensor::full({1}, count)});
  const distribute::ReplicaContext* context = distribute::replica_context();
  const int replicas = context != nullptr ? context->num_replicas_in_sync() : 1;
  if (replicas > 1) {
    if (context->rendezvous == nullptr && context->merge_tracer == nullptr) {
      throw ValueError(error_prefix() + "synchronized statistics need the " + std::to_string(replicas) +
                       " replicas to meet, but this replica runs alone; train under Strategy::run, fit, or a "
                       "compiled replica step (jit::ReplicatedFunction), or set synchronized = false");
    }
    sums = ops::cross_replica_sum(sums, replicas);
  }
  const Tensor total_count = part(sums, 2 * dim_, 1);
  const Tensor mean = part(sums, 0, dim_) / total_count;
  const Tensor mean_of_squares = part(sums, dim_, dim_) / total_count;
  const Tensor variance = ops::maximum(mean_of_squares - ops::square(mean), Tensor::scalar(0.0));
  return {mean, variance};
}

// The moving statistics are one pair of variables every replica shares, so they change once per
// step. Synchronized, every replica holds the same global statistics: replica 0 assigns them (in
// a compiled step, the traced replica; the value comes from the collective, so it is shared).
// Otherwise each replica has its shard's, merged as TensorFlow's MirroredStrategy merges
// an assignment to a variable of aggregation MEAN (Keras 2's moving statistics were ON_READ MEAN
// variables, which comes to the same), not ONLY_FIRST_REPLICA, so that every shard counts: the
// moving mean then follows the global batch's mean, and the moving variance the mean of the
// shards' variances. The merge point's sum of ones counts the replicas that met.
void BatchNormalization::update_moving_statistics(const Moments& batch) {
  const autodiff::NoGradScope no_grad;  // the moving statistics are state, not part of the loss
  const double momentum = options_.momentum;
  const auto assign = [this, momentum](const Tensor& mean, const Tensor& variance) {
    const Tensor new_mean = as_float32(moving_mean_.value()) * momentum + mean * (1.0 - momentum);
    const Tensor new_variance = as_float32(moving_variance_.value()) * momentum + variance * (1.0 - momentum);
    moving_mean_.assign(ops::cast(new_mean, moving_mean_.dtype()));
    moving_variance_.assign(ops::cast(new_variance, moving_variance_.dtype()));
  };
  if (options_.synchronized) {
    if (distribute::records_shared_state()) assign(batch.mean, batch.variance);
    return;
  }
  const distribute::ReplicaContext* context = distribute::replica_context();
  if (context == nullptr || context->num_replicas_in_sync() == 1) {
    assign(batch.mean, batch.variance);
    return;
  }
  const Tensor mine = ops::concat({batch.mean, batch.variance, Tensor::ones({1})});
  distribute::merge_call("the moving statistics of '" + name() + "'", {mine},
                         [this, &assign](const distribute::MergedValues& merged) {
                           const autodiff::NoGradScope no_grad_here;
                           const Tensor sums = merged.sum().at(0);
                           const Tensor replicas = part(sums, 2 * dim_, 1);
                           assign(part(sums, 0, dim_) / replicas, part(sums, dim_, dim_) / replicas);
                         });
}

nlohmann::json BatchNormalization::get_config() const {
  using namespace serialization;  // NOLINT(google-build-using-namespace): the config helpers read as Keras's
  const BatchNormalizationOptions& o = options_;
  nlohmann::json config = Layer::get_config();
  config["axis"] = o.axis;
  config["momentum"] = o.momentum;
  config["epsilon"] = o.epsilon;
  config["center"] = o.center;
  config["scale"] = o.scale;
  config["beta_initializer"] = to_config(o.beta_initializer);
  config["gamma_initializer"] = to_config(o.gamma_initializer);
  config["moving_mean_initializer"] = to_config(o.moving_mean_initializer);
  config["moving_variance_initializer"] = to_config(o.moving_variance_initializer);
  put_null(config, {"beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint"});
  config["synchronized"] = o.synchronized;
  // Keras 3.14 added batch renormalization (renorm, renorm_clipping, renorm_momentum), which Kestrel
  // lacks; its keys are read but not written, as earlier releases reject keys they do not know.
  return config;
}

BatchNormalization BatchNormalization::from_config(const nlohmann::json& config) {
  using namespace serialization;  // NOLINT(google-build-using-namespace): the config helpers read as Keras's
  const std::string what = "layer class 'BatchNormalization'";
  LayerBase base = layer_base_from_config(config, what);
  check_null(config,
             {"beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint", "activity_regularizer"},
             what);
  const std::string no_renorm =
      "Kestrel has no batch renormalization: set 'renorm' to false, 'renorm_clipping' to null and "
      "'renorm_momentum' to 0.99";
  check_unsupported(config, "renorm", false, what, no_renorm);
  check_unsupported(config, "renorm_clipping", nullptr, what, no_renorm);
  check_unsupported(config, "renorm_momentum", 0.99, what, no_renorm);
  const auto initializer = [&](const char* key, const char* fallback) {
    return config.contains(key) ? initializer_from_config(config.at(key), what) : Initializer(fallback);
  };
  return BatchNormalization({.axis = optional<int>(config, "axis", -1, what),
                             .momentum = optional<double>(config, "momentum", 0.99, what),
                             .epsilon = optional<double>(config, "epsilon", 1e-3, what),
                             .center = optional<bool>(config, "center", true, what),
                             .scale = optional<bool>(config, "scale", true, what),
                             .beta_initializer = initializer("beta_initializer", "zeros"),
                             .gamma_initializer = initializer("gamma_initializer", "ones"),
                             .moving_mean_initializer = initializer("moving_mean_initializer", "zeros"),
                             .moving_variance_initializer = initializer("moving_variance_initializer", "ones"),
                             .synchronized = optional<bool>(config, "synchronized", false, what),
                             .name = std::move(base.name),
                             .dtype = base.dtype});
}

}  // namespace kestrel::layers
