// Layer classes known by their C++ type: every built-in layer, and a user's layer registered with
// KESTREL_REGISTER_SERIALIZABLE (Keras's register_keras_serializable).
//
//   class Scale : public Layer { ... };
//   KESTREL_REGISTER_SERIALIZABLE("my_package", Scale);      // at namespace scope, in one .cpp
//
//   Tensor y = Scale()(keras_tensor);                        // a temporary in a Functional model
//
// A temporary layer called on a Keras tensor must outlive the call, so the recorded call moves it
// to the heap, which takes its most-derived type: the registry is where that type is found.
// Built-in classes are listed in one place (layer_classes.cpp) rather than registering themselves
// from their own files, so none goes missing when a static link leaves an unused file out.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <typeindex>
#include <utility>

namespace kestrel {

class Layer;

struct LayerClass {
  /// "keras.layers" for the built-in classes, the package given to the macro for a user's.
  std::string package;
  /// The Keras class name ("Dense").
  std::string class_name;
  std::type_index type;
  std::function<std::shared_ptr<Layer>(Layer&&)> move_to_heap;

  /// Keras's registered name: "package>ClassName".
  std::string registered_name() const { return package + ">" + class_name; }
};

/// The entry for a class T derived from Layer and move-constructible.
template <class T>
LayerClass layer_class(std::string package, std::string class_name) {
  return {std::move(package), std::move(class_name), std::type_index(typeid(T)),
          [](Layer&& layer) -> std::shared_ptr<Layer> { return std::make_shared<T>(static_cast<T&&>(layer)); }};
}

/// Adds a class; registering a type twice keeps the first entry, registering a second type under a
/// registered name throws ValueError.
void register_layer_class(LayerClass layer_class);
/// The entry for this type, or null.
const LayerClass* find_layer_class(std::type_index type);

/// Moves `layer` (a temporary) onto the heap as its own class. Throws ValueError naming the class
/// and the registry macro when the class is not registered.
std::shared_ptr<Layer> move_to_heap(Layer&& layer);

namespace detail {
/// Registers a user's class during static initialization (what the macro expands to).
struct LayerClassRegistrar {
  explicit LayerClassRegistrar(LayerClass layer_class) { register_layer_class(std::move(layer_class)); }
};
}  // namespace detail

}  // namespace kestrel

/// Registers a user's layer class under "package>Class", as Keras's register_keras_serializable.
#define KESTREL_REGISTER_SERIALIZABLE(package, Class)                                      \
  static const ::kestrel::detail::LayerClassRegistrar kestrel_registered_##Class##_class { \
    ::kestrel::layer_class<Class>(package, #Class)                                         \
  }
