#include "framework/layers/permute.h"

#include <algorithm>
#include <string>
#include <utility>

#include "framework/core/error.h"
#include "framework/layers/serialization.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::layers {
namespace {
std::string dims_string(const std::vector<int>& dims) {
  std::string out = "{";
  for (std::size_t i = 0; i < dims.size(); ++i) out += (i == 0 ? "" : ", ") + std::to_string(dims[i]);
  return out + "}";
}
}  // namespace

Permute::Permute(std::vector<int> dims, PermuteOptions options)
    : Layer("Permute", options.name, options.dtype), dims_(std::move(dims)) {
  std::vector<int> sorted = dims_;
  std::sort(sorted.begin(), sorted.end());
  bool is_permutation = !sorted.empty();
  for (std::size_t i = 0; i < sorted.size(); ++i) is_permutation &= sorted[i] == static_cast<int>(i) + 1;
  if (!is_permutation) {
    throw ValueError(error_prefix() + "dims are " + dims_string(dims_) + "; they must hold each of 1.." +
                     std::to_string(std::max<std::size_t>(dims_.size(), 1)) +
                     " once (axes after the batch dim, counted from 1, as in Keras)");
  }
}

Tensor Permute::call(const Tensor& x, bool training) {
  const int rank = static_cast<int>(dims_.size()) + 1;
  if (x.rank() != rank) {
    throw ShapeError(error_prefix() + "input is " + x.shape().to_string() + " but dims " + dims_string(dims_) +
                     " reorder " + std::to_string(rank - 1) + " axes after the batch dim; feed inputs of rank " +
                     std::to_string(rank) +
                     (x.rank() >= 2 ? ", or give dims a permutation of 1.." + std::to_string(x.rank() - 1) : ""));
  }
  std::vector<int> perm{0};
  perm.insert(perm.end(), dims_.begin(), dims_.end());
  return ops::transpose(x, perm);
}

nlohmann::json Permute::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["dims"] = dims_;
  return config;
}

Permute Permute::from_config(const nlohmann::json& config) {
  using namespace serialization;  // NOLINT(google-build-using-namespace): the config helpers read as Keras's
  const std::string what = "layer class 'Permute'";
  LayerBase base = layer_base_from_config(config, what);
  check_null(config, {"activity_regularizer"}, what);
  return Permute(required<std::vector<int>>(config, "dims", what), {.name = std::move(base.name), .dtype = base.dtype});
}

}  // namespace kestrel::layers
