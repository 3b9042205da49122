#include "framework/layers/reshape.h"

#include <algorithm>
#include <string>
#include <utility>

#include "framework/core/error.h"
#include "framework/layers/serialization.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::layers {

Reshape::Reshape(std::vector<std::int64_t> target_shape, ReshapeOptions options)
    : Layer("Reshape", options.name, options.dtype), target_shape_(std::move(target_shape)) {
  const std::string given = "target_shape is " + dims_to_string(target_shape_);
  if (static_cast<int>(target_shape_.size()) + 1 > Shape::kMaxRank) {
    throw ValueError(error_prefix() + given + ": with the batch dim that is more than " +
                     std::to_string(Shape::kMaxRank) + " axes, the most a tensor has");
  }
  const auto inferred = std::count(target_shape_.begin(), target_shape_.end(), -1);
  const bool other_entries_positive =
      std::all_of(target_shape_.begin(), target_shape_.end(), [](std::int64_t d) { return d > 0 || d == -1; });
  if (inferred > 1 || !other_entries_positive) {
    throw ValueError(error_prefix() + given +
                     "; each entry must be positive, except one -1 for the size left over (the batch dim is not "
                     "part of it)");
  }
}

Tensor Reshape::call(const Tensor& x, bool training) {
  if (x.rank() < 1) throw ShapeError(error_prefix() + "input is a scalar; Reshape needs a batch dim first");
  std::int64_t sample_size = 1;
  for (int d = 1; d < x.rank(); ++d) sample_size *= x.shape()[d];
  std::int64_t known = 1;
  int inferred_at = -1;
  for (std::size_t i = 0; i < target_shape_.size(); ++i) {
    if (target_shape_[i] == -1) {
      inferred_at = static_cast<int>(i);
    } else {
      known *= target_shape_[i];
    }
  }
  const bool fits = inferred_at < 0 ? known == sample_size : sample_size % known == 0;
  if (!fits) {
    const Shape sample(std::vector<std::int64_t>(x.shape().dims().begin() + 1, x.shape().dims().end()));
    const std::string start = error_prefix() + "cannot reshape input " + x.shape().to_string() + " to target_shape " +
                              dims_to_string(target_shape_) + ": a sample " + sample.to_string() + " holds " +
                              std::to_string(sample_size) + " values";
    if (inferred_at < 0) {
      throw ShapeError(start + " and the target " + std::to_string(known) +
                       "; choose a target_shape whose sizes multiply to " + std::to_string(sample_size) +
                       ", or put -1 in one place to infer that size");
    }
    throw ShapeError(start + ", not a multiple of " + std::to_string(known) +
                     " (the product of the sizes beside the -1); choose sizes whose product divides " +
                     std::to_string(sample_size));
  }
  // The batch dim is taken from the static shape, not inferred, so a batch of 0 reshapes too.
  std::vector<std::int64_t> shape{x.shape()[0]};
  for (std::int64_t d : target_shape_) shape.push_back(d == -1 ? sample_size / known : d);
  return ops::reshape(x, shape);
}

nlohmann::json Reshape::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["target_shape"] = target_shape_;
  return config;
}

Reshape Reshape::from_config(const nlohmann::json& config) {
  using namespace serialization;  // NOLINT(google-build-using-namespace): the config helpers read as Keras's
  const std::string what = "layer class 'Reshape'";
  LayerBase base = layer_base_from_config(config, what);
  check_null(config, {"activity_regularizer"}, what);
  return Reshape(required<std::vector<std::int64_t>>(config, "target_shape", what),
                 {.name = std::move(base.name), .dtype = base.dtype});
}

}  // namespace kestrel::layers
