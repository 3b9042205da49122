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
#include <optional>
#include <string>
#include <type_traits>
#include <typeindex>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kestrel {

class Layer;

struct LayerClass {
  /// The package given to KESTREL_REGISTER_SERIALIZABLE; for a built-in class, the module Keras's
  /// configs name ("keras.layers", "keras" for Sequential).
  std::string package;
  /// The Keras class name ("Dense").
  std::string class_name;
  std::type_index type;
  std::function<std::shared_ptr<Layer>(Layer&&)> move_to_heap;
  /// Makes the layer from its config: the class's static from_config, else, for a class
  /// constructible without arguments, that constructor. Unset when the class has neither.
  std::function<std::unique_ptr<Layer>(const nlohmann::json&)> from_config;
  /// True for Kestrel's own classes, found by class name alone as Keras's built-in ones are.
  bool builtin = false;
  /// True when from_config is the class's default constructor rather than its own from_config.
  bool default_constructed = false;
  /// What a config's "registered_name" holds: "package>Class" for a user's class, none (null) for
  /// a built-in one, which Keras finds by module and class name.
  std::optional<std::string> registered_name;
};

/// The entry for a user's class T, derived from Layer: "package>Class". A temporary of T can be
/// kept by a Functional model when T is move-constructible (models are not: a variable keeps them).
template <class T>
LayerClass layer_class(std::string package, std::string class_name) {
  LayerClass c{std::move(package), std::move(class_name), std::type_index(typeid(T)), nullptr, nullptr, false, false,
               std::nullopt};
  c.registered_name = c.package + ">" + c.class_name;
  if constexpr (std::is_move_constructible_v<T>) {
    c.move_to_heap = [](Layer&& layer) -> std::shared_ptr<Layer> {
      return std::make_shared<T>(static_cast<T&&>(layer));
    };
  }
  if constexpr (requires(const nlohmann::json& config) { T::from_config(config); }) {
    // from_config returns the layer (T) or a pointer to it (std::unique_ptr<T>, as models do).
    c.from_config = [](const nlohmann::json& config) -> std::unique_ptr<Layer> {
      if constexpr (std::is_convertible_v<decltype(T::from_config(config)), std::unique_ptr<Layer>>) {
        return T::from_config(config);
      } else {
        return std::make_unique<T>(T::from_config(config));
      }
    };
  } else if constexpr (std::is_default_constructible_v<T>) {
    // Made with its default constructor: deserialize_layer then checks that the layer's own config
    // equals the one read, so a class with options and no from_config is an error, not a loss.
    c.from_config = [](const nlohmann::json&) -> std::unique_ptr<Layer> { return std::make_unique<T>(); };
    c.default_constructed = true;
  }
  return c;
}

/// The entry for one of Kestrel's own classes, named in configs by Keras's module and class name.
template <class T>
LayerClass builtin_layer_class(std::string module, std::string class_name) {
  LayerClass c = layer_class<T>(std::move(module), std::move(class_name));
  c.builtin = true;
  c.registered_name = std::nullopt;
  // Every built-in class with options reads them in its own from_config; none is guessed.
  if constexpr (!requires(const nlohmann::json& config) { T::from_config(config); }) {
    c.from_config = nullptr;
    c.default_constructed = false;
  }
  return c;
}

/// Adds a class; registering a type twice keeps the first entry, registering a second type under a
/// name taken throws ValueError.
void register_layer_class(LayerClass layer_class);
/// The entry for this type, or null.
const LayerClass* find_layer_class(std::type_index type);
/// The user's class registered as "package>Class", or null.
const LayerClass* find_registered_layer_class(const std::string& registered_name);
/// The built-in class of this Keras name ("Dense", "Sequential"), or null.
const LayerClass* find_builtin_layer_class(const std::string& class_name);

/// The Keras names of Kestrel's own layer classes, in name order (models aside).
std::vector<std::string> builtin_layer_class_names();

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
