#include "framework/layers/input_layer.h"

#include <memory>
#include <utility>
#include <vector>

#include "framework/core/error.h"
#include "framework/layers/keras_tensor.h"
#include "framework/layers/serialization.h"

namespace kestrel {
namespace layers {
namespace {

// The shape (batch dim apart) and options a Keras InputLayer config describes: Keras 3 writes
// batch_shape, Keras 2 batch_input_shape.
std::pair<Shape, InputOptions> input_from_config(const nlohmann::json& config) {
  using serialization::optional;
  const std::string what = "layer class 'InputLayer'";
  const char* key = config.contains("batch_shape") ? "batch_shape" : "batch_input_shape";
  const nlohmann::json batch_shape = serialization::required<nlohmann::json>(config, key, what);
  const Shape with_batch = serialization::shape_from_config(batch_shape, 1, what);
  std::vector<std::int64_t> dims;
  for (int d = 1; d < with_batch.rank(); ++d) dims.push_back(with_batch[d]);
  InputOptions options{.name = optional<std::string>(config, "name", "", what)};
  const std::string dtype = optional<std::string>(config, "dtype", "float32", what);
  try {
    options.dtype = dtype_from_string(dtype);
  } catch (const ValueError& e) {
    throw ValueError(what + ": " + e.what());
  }
  if (batch_shape.at(0).is_number_integer()) options.batch_size = batch_shape.at(0).get<std::int64_t>();
  return {Shape(dims), std::move(options)};
}

}  // namespace

InputLayer::InputLayer(Shape shape, InputOptions options)
    : Layer("InputLayer", options.name), shape_(std::move(shape)), options_(std::move(options)) {
  for (int d = 0; d < shape_.rank(); ++d) {
    if (shape_[d] < 1) {
      throw ShapeError(error_prefix() + "every dim of an input's shape must be positive, got " + shape_.to_string() +
                       " (the batch dim is not part of it)");
    }
  }
  if (options_.batch_size < 0) {
    throw ValueError(error_prefix() + "batch_size must be positive, or 0 for any batch, got " +
                     std::to_string(options_.batch_size));
  }
  mark_built();
  // The model's summary lists it with its shape, though it is never called as other layers are.
  std::vector<std::int64_t> dims{options_.batch_size > 0 ? options_.batch_size : 1};
  for (int d = 0; d < shape_.rank(); ++d) dims.push_back(shape_[d]);
  record_output_shape(Shape(dims));
}

nlohmann::json InputLayer::get_config() const {
  std::vector<std::int64_t> dims{options_.batch_size};
  for (int d = 0; d < shape_.rank(); ++d) dims.push_back(shape_[d]);
  nlohmann::json batch_shape = dims;
  if (options_.batch_size == 0) batch_shape[0] = nullptr;
  return {{"batch_shape", std::move(batch_shape)},
          {"dtype", std::string(to_string(options_.dtype))},
          {"sparse", false},
          {"name", name()}};
}

InputLayer InputLayer::from_config(const nlohmann::json& config) {
  auto [shape, options] = input_from_config(config);
  return InputLayer(std::move(shape), std::move(options));
}

}  // namespace layers

Tensor input_from_config(const nlohmann::json& config) {
  auto [shape, options] = layers::input_from_config(config);
  return Input(shape, std::move(options));
}

Tensor Input(const Shape& shape, InputOptions options) {
  const std::int64_t batch = options.batch_size > 0 ? options.batch_size : 1;
  const DType dtype = options.dtype;
  auto layer = std::make_shared<layers::InputLayer>(shape, std::move(options));
  std::vector<std::int64_t> dims{batch};
  for (int d = 0; d < shape.rank(); ++d) dims.push_back(shape[d]);

  auto node = std::make_shared<functional::Node>();
  node->layer = layer.get();
  node->kept = std::move(layer);
  node->call = [](const std::vector<Tensor>& xs, bool /*training*/) { return xs.front(); };
  return functional::make_keras_tensor({Shape(dims), dtype}, std::move(node));
}

}  // namespace kestrel
