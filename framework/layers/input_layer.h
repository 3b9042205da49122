// Input: where a Functional model's data comes in, as keras.Input and keras.layers.InputLayer.
//
//   Tensor image = Input({28, 28, 1}, {.name = "image"});       // a Keras tensor, batch dim apart
//   Tensor ids = Input({128}, {.name = "input_ids", .dtype = DType::int32});
//
// Input() makes an InputLayer and returns its output, a Keras tensor (layers/keras_tensor.h).
// Kestrel's shapes have no unknown dims, so the Keras tensor's batch dim is 1 unless batch_size
// is given; only shape inference sees it, and the model runs on any batch. Summaries and configs
// print it as None, as Keras does.
#pragma once

#include <cstdint>
#include <string>

#include "framework/layers/layer.h"

namespace kestrel {

struct InputOptions {
  /// The input's name: also the key of its data when the model takes named inputs.
  std::string name;
  DType dtype = DType::float32;
  /// 0: any batch (Keras's None).
  std::int64_t batch_size = 0;
};

namespace layers {

class InputLayer : public Layer {
 public:
  /// shape excludes the batch dim.
  InputLayer(Shape shape, InputOptions options = {});

  /// The data it was given, unchanged.
  Tensor call(const Tensor& x, bool training) override { return x; }

  nlohmann::json get_config() const override;
  static InputLayer from_config(const nlohmann::json& config);

  /// The shape without the batch dim.
  const Shape& shape() const { return shape_; }
  DType dtype() const { return options_.dtype; }
  /// 0 when any batch is accepted.
  std::int64_t batch_size() const { return options_.batch_size; }

 private:
  Shape shape_;
  InputOptions options_;
};

}  // namespace layers

/// A Keras tensor standing for the model's data of this shape (batch dim excluded).
Tensor Input(const Shape& shape, InputOptions options = {});  // NOLINT(readability-identifier-naming): keras.Input
/// The Input() an InputLayer's Keras config describes (what a Functional model's config starts from).
Tensor input_from_config(const nlohmann::json& config);

}  // namespace kestrel
