#include "framework/layers/input_layer.h"

#include <memory>
#include <utility>
#include <vector>

#include "framework/core/error.h"
#include "framework/layers/keras_tensor.h"

namespace kestrel {
namespace layers {

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

}  // namespace layers

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
