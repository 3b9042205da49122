#include "framework/layers/merging.h"

#include <algorithm>
#include <string>
#include <utility>

#include "framework/core/error.h"
#include "framework/layers/serialization.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::layers {
namespace {

// "[2,3] and [2,4]", or "[2,3], [2,3] and [2,4]".
std::string shapes_to_string(const std::vector<Shape>& shapes) {
  std::string out;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    if (i > 0) out += i + 1 == shapes.size() ? " and " : ", ";
    out += shapes[i].to_string();
  }
  return out;
}

void check_count(const Layer& layer, std::size_t count, std::size_t exact) {
  const std::string called = "called on " + std::to_string(count) + (count == 1 ? " input; " : " inputs; ");
  if (exact != 0 && count != exact) {
    throw ValueError(layer.error_prefix() + called + layer.class_name() + " takes exactly " + std::to_string(exact) +
                     " and returns inputs[0] - inputs[1]: for more, subtract in steps, or Add the others first");
  }
  if (count < 2) {
    throw ValueError(layer.error_prefix() + called + layer.class_name() +
                     " merges a list of at least 2 tensors: pass them in one call, as layer({a, b})");
  }
}

void check_not_scalars(const Layer& layer, const std::vector<Shape>& shapes) {
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    if (shapes[i].rank() == 0) {
      throw ShapeError(layer.error_prefix() + "input " + std::to_string(i) + " is a scalar (inputs " +
                       shapes_to_string(shapes) + "); merging layers need a batch dim first: reshape it to [1]");
    }
  }
}

// Floating inputs are already in the compute dtype; what can still differ is an integer input
// beside a floating one, which the ops would refuse without naming the layer.
void check_one_dtype(const Layer& layer, const std::vector<Tensor>& xs) {
  for (const Tensor& x : xs) {
    if (x.dtype() != xs.front().dtype()) {
      throw TypeError(layer.error_prefix() + "inputs have dtypes " + std::string(to_string(xs.front().dtype())) +
                      " and " + std::string(to_string(x.dtype())) + "; " + layer.class_name() +
                      " needs one dtype: cast the odd input with ops::cast first");
    }
  }
}

[[noreturn]] void reject_single_tensor(const Layer& layer, const Shape& shape) {
  throw ValueError(layer.error_prefix() + "called on one tensor " + shape.to_string() + "; " + layer.class_name() +
                   " takes a list of tensors: call it as layer({a, b})");
}

int max_rank(const std::vector<Shape>& shapes) {
  int rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.rank());
  return rank;
}

// Keras's Merge: an input of lower rank gains size-1 axes right after its batch dim.
Shape lined_up(const Shape& shape, int rank) {
  Shape out{shape[0]};
  for (int i = shape.rank(); i < rank; ++i) out.push_back(1);
  for (int i = 1; i < shape.rank(); ++i) out.push_back(shape[i]);
  return out;
}

// The options of a merging layer's config: its base config, as Keras's Merge has no options.
MergeOptions merge_options_from_config(const nlohmann::json& config, const std::string& class_name) {
  using namespace serialization;  // NOLINT(google-build-using-namespace): the config helpers read as Keras's
  const std::string what = "layer class '" + class_name + "'";
  LayerBase base = layer_base_from_config(config, what);
  check_null(config, {"activity_regularizer"}, what);
  return {.name = std::move(base.name), .dtype = base.dtype};
}

}  // namespace

Merge::Merge(std::string class_name, MergeOptions options, std::size_t exact_inputs)
    : Layer(std::move(class_name), options.name, options.dtype),
      options_(std::move(options)),
      exact_inputs_(exact_inputs) {}

void Merge::check_shapes(const std::vector<Shape>& shapes) const {
  check_count(*this, shapes.size(), exact_inputs_);
  check_not_scalars(*this, shapes);
  const int rank = max_rank(shapes);
  Shape merged = lined_up(shapes.front(), rank);
  for (const Shape& shape : shapes) {
    const Shape next = lined_up(shape, rank);
    for (int axis = 0; axis < rank; ++axis) {
      if (merged[axis] == next[axis] || next[axis] == 1) continue;
      if (merged[axis] == 1) {
        merged[axis] = next[axis];
        continue;
      }
      const bool ranks_differ = shape.rank() != rank || shapes.front().rank() != rank;
      throw ShapeError(error_prefix() + "inputs have shapes " + shapes_to_string(shapes) +
                       ", which do not merge: axis " + std::to_string(axis) + " has sizes " +
                       std::to_string(merged[axis]) + " and " + std::to_string(next[axis]) +
                       (ranks_differ ? " (an input of lower rank gains size-1 axes after its batch dim)" : "") +
                       "; element-wise merging needs equal sizes, or 1 on one side to broadcast: make the shapes "
                       "match (a Dense or Reshape on one branch), or join the inputs with layers::Concatenate");
    }
  }
}

void Merge::build_list(const std::vector<Shape>& input_shapes) { check_shapes(input_shapes); }

Tensor Merge::call_list(const std::vector<Tensor>& xs, bool training) {
  std::vector<Shape> shapes;
  shapes.reserve(xs.size());
  for (const Tensor& x : xs) shapes.push_back(x.shape());
  check_shapes(shapes);
  check_one_dtype(*this, xs);
  const int rank = max_rank(shapes);
  std::vector<Tensor> same_rank;
  same_rank.reserve(xs.size());
  for (const Tensor& x : xs) same_rank.push_back(x.rank() == rank ? x : ops::reshape(x, lined_up(x.shape(), rank)));
  return merge(same_rank);
}

void Merge::build(const Shape& input_shape) { reject_single_tensor(*this, input_shape); }

Tensor Merge::call(const Tensor& x, bool training) { reject_single_tensor(*this, x.shape()); }

nlohmann::json Merge::get_config() const { return Layer::get_config(); }

Add::Add(MergeOptions options) : Merge("Add", std::move(options)) {}

Tensor Add::merge(const std::vector<Tensor>& xs) const {
  Tensor sum = xs.front();
  for (std::size_t i = 1; i < xs.size(); ++i) sum = ops::add(sum, xs[i]);
  return sum;
}

Add Add::from_config(const nlohmann::json& config) { return Add(merge_options_from_config(config, "Add")); }

Subtract::Subtract(MergeOptions options) : Merge("Subtract", std::move(options), /*exact_inputs=*/2) {}

Tensor Subtract::merge(const std::vector<Tensor>& xs) const { return ops::subtract(xs[0], xs[1]); }

Subtract Subtract::from_config(const nlohmann::json& config) {
  return Subtract(merge_options_from_config(config, "Subtract"));
}

Multiply::Multiply(MergeOptions options) : Merge("Multiply", std::move(options)) {}

Tensor Multiply::merge(const std::vector<Tensor>& xs) const {
  Tensor product = xs.front();
  for (std::size_t i = 1; i < xs.size(); ++i) product = ops::multiply(product, xs[i]);
  return product;
}

Multiply Multiply::from_config(const nlohmann::json& config) {
  return Multiply(merge_options_from_config(config, "Multiply"));
}

Average::Average(MergeOptions options) : Merge("Average", std::move(options)) {}

Tensor Average::merge(const std::vector<Tensor>& xs) const {
  Tensor sum = xs.front();
  for (std::size_t i = 1; i < xs.size(); ++i) sum = ops::add(sum, xs[i]);
  // Keras divides with true division, which gives integers a float32 mean rather than a truncated one.
  if (!is_floating(sum.dtype())) sum = ops::cast(sum, DType::float32);
  return sum / static_cast<double>(xs.size());
}

Average Average::from_config(const nlohmann::json& config) {
  return Average(merge_options_from_config(config, "Average"));
}

Maximum::Maximum(MergeOptions options) : Merge("Maximum", std::move(options)) {}

Tensor Maximum::merge(const std::vector<Tensor>& xs) const {
  Tensor out = xs.front();
  for (std::size_t i = 1; i < xs.size(); ++i) out = ops::maximum(out, xs[i]);
  return out;
}

Maximum Maximum::from_config(const nlohmann::json& config) {
  return Maximum(merge_options_from_config(config, "Maximum"));
}

Minimum::Minimum(MergeOptions options) : Merge("Minimum", std::move(options)) {}

Tensor Minimum::merge(const std::vector<Tensor>& xs) const {
  Tensor out = xs.front();
  for (std::size_t i = 1; i < xs.size(); ++i) out = ops::minimum(out, xs[i]);
  return out;
}

Minimum Minimum::from_config(const nlohmann::json& config) {
  return Minimum(merge_options_from_config(config, "Minimum"));
}

Concatenate::Concatenate(ConcatenateOptions options)
    : Layer("Concatenate", options.name, options.dtype), options_(std::move(options)) {}

int Concatenate::checked_axis(const std::vector<Shape>& shapes) const {
  check_count(*this, shapes.size(), 0);
  check_not_scalars(*this, shapes);
  const int rank = shapes.front().rank();
  for (const Shape& shape : shapes) {
    if (shape.rank() != rank) {
      throw ShapeError(error_prefix() + "inputs have shapes " + shapes_to_string(shapes) +
                       ", of different ranks; Concatenate joins inputs of one rank: give the others the same "
                       "axes first (layers::Reshape, or ops::expand_dims)");
    }
  }
  const int axis = options_.axis;
  if (axis < -rank || axis >= rank) {
    throw ValueError(error_prefix() + "axis " + std::to_string(axis) + " is outside inputs of rank " +
                     std::to_string(rank) + " (shapes " + shapes_to_string(shapes) + "); choose an axis from " +
                     std::to_string(-rank) + " to " + std::to_string(rank - 1) +
                     " (the batch dim is axis 0, the last axis -1)");
  }
  const int joined = axis < 0 ? axis + rank : axis;
  for (const Shape& shape : shapes) {
    for (int d = 0; d < rank; ++d) {
      if (d == joined || shape[d] == shapes.front()[d]) continue;
      throw ShapeError(error_prefix() + "inputs have shapes " + shapes_to_string(shapes) +
                       ", which cannot be joined along axis " + std::to_string(axis) + ": axis " + std::to_string(d) +
                       " has sizes " + std::to_string(shapes.front()[d]) + " and " + std::to_string(shape[d]) +
                       "; every axis but the joined one needs one size: make those sizes equal (a Dense, Reshape "
                       "or pooling on one branch), or join along the axis where the shapes differ");
    }
  }
  return joined;
}

void Concatenate::build_list(const std::vector<Shape>& input_shapes) { checked_axis(input_shapes); }

Tensor Concatenate::call_list(const std::vector<Tensor>& xs, bool training) {
  std::vector<Shape> shapes;
  shapes.reserve(xs.size());
  for (const Tensor& x : xs) shapes.push_back(x.shape());
  const int axis = checked_axis(shapes);
  check_one_dtype(*this, xs);
  return ops::concat(xs, axis);
}

void Concatenate::build(const Shape& input_shape) { reject_single_tensor(*this, input_shape); }

Tensor Concatenate::call(const Tensor& x, bool training) { reject_single_tensor(*this, x.shape()); }

nlohmann::json Concatenate::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["axis"] = options_.axis;
  return config;
}

Concatenate Concatenate::from_config(const nlohmann::json& config) {
  using namespace serialization;  // NOLINT(google-build-using-namespace): the config helpers read as Keras's
  const std::string what = "layer class 'Concatenate'";
  LayerBase base = layer_base_from_config(config, what);
  check_null(config, {"activity_regularizer"}, what);
  return Concatenate(
      {.axis = optional<int>(config, "axis", -1, what), .name = std::move(base.name), .dtype = base.dtype});
}

}  // namespace kestrel::layers
