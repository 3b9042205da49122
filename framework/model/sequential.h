// Sequential: a model that is a plain stack of layers, as keras.Sequential.
//
//   Sequential model({layers::Dense(512, {.activation = "relu"}),
//                     layers::Dropout(0.2),
//                     layers::Dense(10)});
//   model.add(layers::Dense(10));                            // by value, as Keras's model.add
//   auto& conv = model.add<layers::Conv2D>(32, std::array{3, 3});   // or built in place
//   model.compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy"});
//
// The model owns its layers; each one's output is the next one's input, and the training flag is
// passed to every layer. Layers taken by value must not have been added to another layer.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "framework/model/model.h"

namespace kestrel {

class Sequential;

/// A layer handed to Sequential's constructor by value (a temporary, moved into the model).
class LayerArg {
 public:
  template <class T, std::enable_if_t<std::is_base_of_v<Layer, T> && !std::is_lvalue_reference_v<T>, int> = 0>
  LayerArg(T&& layer);  // NOLINT(google-explicit-constructor): the list reads like Keras's

 private:
  friend class Sequential;
  std::function<Layer&(Sequential&)> adopt_;
};

class Sequential : public Model {
 public:
  /// An empty model ("sequential", made unique); add layers with add().
  explicit Sequential(std::string name = "");
  /// A model of these layers, in order.
  explicit Sequential(std::initializer_list<LayerArg> layers, std::string name = "");

  /// Appends a layer given by value (moved in); returns the model's copy.
  template <class T, std::enable_if_t<std::is_base_of_v<Layer, T> && !std::is_lvalue_reference_v<T>, int> = 0>
  T& add(T&& layer) {
    static_assert(std::is_move_constructible_v<T>, "Sequential::add(layer) moves the layer in: T must be movable");
    return Layer::add<T>(std::move(layer));
  }
  /// Appends a layer built in place from constructor arguments: add<layers::Dense>(10).
  template <class T, class... Args>
  T& add(Args&&... args) {
    return Layer::add<T>(std::forward<Args>(args)...);
  }

  /// Appends a layer made elsewhere (from its config, say); returns it.
  Layer& add(std::unique_ptr<Layer> layer);

  /// Runs the layers in order, each on the previous one's output.
  Tensor call(const Inputs& inputs, bool training) override;
  using Model::call;

  /// Keras's Sequential config: the layers' configs, led by an InputLayer's once the model is built.
  nlohmann::json get_config() const override;
  /// The model a Sequential config describes, each layer built from its build_config.
  static std::unique_ptr<Sequential> from_config(const nlohmann::json& config);
};

template <class T, std::enable_if_t<std::is_base_of_v<Layer, T> && !std::is_lvalue_reference_v<T>, int>>
LayerArg::LayerArg(T&& layer)
    : adopt_([held = std::make_shared<T>(std::move(layer))](Sequential& model) -> Layer& {
        return model.add(std::move(*held));
      }) {}

}  // namespace kestrel
