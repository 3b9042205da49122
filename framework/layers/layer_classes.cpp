#include "framework/layers/layer_classes.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/layers/activation.h"
#include "framework/layers/batch_normalization.h"
#include "framework/layers/conv1d.h"
#include "framework/layers/conv2d.h"
#include "framework/layers/dense.h"
#include "framework/layers/dropout.h"
#include "framework/layers/embedding.h"
#include "framework/layers/flatten.h"
#include "framework/layers/global_pooling.h"
#include "framework/layers/gru.h"
#include "framework/layers/input_layer.h"
#include "framework/layers/layer.h"
#include "framework/layers/layer_normalization.h"
#include "framework/layers/lstm.h"
#include "framework/layers/merging.h"
#include "framework/layers/multi_head_attention.h"
#include "framework/layers/permute.h"
#include "framework/layers/pooling.h"
#include "framework/layers/reshape.h"
#include "framework/layers/transformer_encoder.h"
#include "framework/layers/up_sampling2d.h"
#include "framework/layers/zero_padding2d.h"

namespace kestrel {
namespace {

template <class T>
LayerClass keras_hub_class(const std::string& class_name) {
  LayerClass c = builtin_layer_class<T>("keras_hub.layers", class_name);
  c.registered_name = "keras_hub>" + class_name;
  return c;
}

std::vector<LayerClass> builtin_classes() {
  const std::string keras = "keras.layers";
  return {
      builtin_layer_class<layers::Activation>(keras, "Activation"),
      builtin_layer_class<layers::Add>(keras, "Add"),
      builtin_layer_class<layers::Average>(keras, "Average"),
      builtin_layer_class<layers::AveragePooling2D>(keras, "AveragePooling2D"),
      builtin_layer_class<layers::BatchNormalization>(keras, "BatchNormalization"),
      builtin_layer_class<layers::Concatenate>(keras, "Concatenate"),
      builtin_layer_class<layers::Conv1D>(keras, "Conv1D"),
      builtin_layer_class<layers::Conv2D>(keras, "Conv2D"),
      builtin_layer_class<layers::Dense>(keras, "Dense"),
      builtin_layer_class<layers::Dropout>(keras, "Dropout"),
      builtin_layer_class<layers::Embedding>(keras, "Embedding"),
      builtin_layer_class<layers::Flatten>(keras, "Flatten"),
      builtin_layer_class<layers::GlobalAveragePooling1D>(keras, "GlobalAveragePooling1D"),
      builtin_layer_class<layers::GlobalAveragePooling2D>(keras, "GlobalAveragePooling2D"),
      builtin_layer_class<layers::GlobalMaxPooling1D>(keras, "GlobalMaxPooling1D"),
      builtin_layer_class<layers::GlobalMaxPooling2D>(keras, "GlobalMaxPooling2D"),
      builtin_layer_class<layers::GRU>(keras, "GRU"),
      builtin_layer_class<layers::InputLayer>(keras, "InputLayer"),
      builtin_layer_class<layers::LayerNormalization>(keras, "LayerNormalization"),
      builtin_layer_class<layers::LSTM>(keras, "LSTM"),
      builtin_layer_class<layers::MaxPooling2D>(keras, "MaxPooling2D"),
      builtin_layer_class<layers::MultiHeadAttention>(keras, "MultiHeadAttention"),
      builtin_layer_class<layers::Maximum>(keras, "Maximum"),
      builtin_layer_class<layers::Minimum>(keras, "Minimum"),
      builtin_layer_class<layers::Multiply>(keras, "Multiply"),
      builtin_layer_class<layers::Permute>(keras, "Permute"),
      builtin_layer_class<layers::Reshape>(keras, "Reshape"),
      builtin_layer_class<layers::Subtract>(keras, "Subtract"),
      builtin_layer_class<layers::UpSampling2D>(keras, "UpSampling2D"),
      builtin_layer_class<layers::ZeroPadding2D>(keras, "ZeroPadding2D"),
      // Keras-Hub's layer, named in configs as Keras-Hub registers it.
      keras_hub_class<layers::TransformerEncoder>("TransformerEncoder"),
  };
}

struct Registry {
  std::mutex mutex;
  std::map<std::type_index, LayerClass> by_type;
  std::map<std::string, std::type_index> by_registered_name;  // "package>Class"
  std::map<std::string, std::type_index> builtin_by_class;    // "Dense", for Kestrel's own classes
  bool builtins_added = false;
};

Registry& registry() {
  static Registry r;
  return r;
}

// Adds `key -> type` to `names`, refusing a key already taken by another class.
void claim(std::map<std::string, std::type_index>& names, const std::string& key, std::type_index type) {
  const auto taken = names.find(key);
  if (taken != names.end() && taken->second != type) {
    throw ValueError("layer class '" + key +
                     "' is registered twice, for two different C++ classes; give one of them another package or name");
  }
  names.emplace(key, type);
}

void add_locked(Registry& r, LayerClass c) {
  if (c.registered_name) claim(r.by_registered_name, *c.registered_name, c.type);
  if (c.builtin) claim(r.builtin_by_class, c.class_name, c.type);
  r.by_type.emplace(c.type, std::move(c));
}

void add_builtins_locked(Registry& r) {
  if (r.builtins_added) return;
  r.builtins_added = true;
  for (LayerClass& c : builtin_classes()) add_locked(r, std::move(c));
}

const LayerClass* find_in(std::map<std::string, std::type_index> Registry::*names, const std::string& key) {
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  add_builtins_locked(r);
  const auto found = (r.*names).find(key);
  return found == (r.*names).end() ? nullptr : &r.by_type.at(found->second);
}

}  // namespace

void register_layer_class(LayerClass layer_class) {
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  add_locked(r, std::move(layer_class));
}

const LayerClass* find_layer_class(std::type_index type) {
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  add_builtins_locked(r);
  const auto found = r.by_type.find(type);
  return found == r.by_type.end() ? nullptr : &found->second;
}

const LayerClass* find_registered_layer_class(const std::string& registered_name) {
  return find_in(&Registry::by_registered_name, registered_name);
}

const LayerClass* find_builtin_layer_class(const std::string& class_name) {
  return find_in(&Registry::builtin_by_class, class_name);
}

std::vector<std::string> builtin_layer_class_names() {
  std::vector<std::string> names;
  for (const LayerClass& c : builtin_classes()) names.push_back(c.class_name);
  std::sort(names.begin(), names.end());
  return names;
}

std::shared_ptr<Layer> move_to_heap(Layer&& layer) {
  const LayerClass* c = find_layer_class(std::type_index(typeid(layer)));
  if (c == nullptr) {
    throw ValueError(layer.error_prefix() +
                     "a temporary layer was called on a Keras tensor, and a Functional model must keep it, but its "
                     "C++ class is not registered; keep the layer in a variable that outlives the model, or add "
                     "KESTREL_REGISTER_SERIALIZABLE(\"your_package\", YourClass) after the class's definition");
  }
  if (!c->move_to_heap) {
    throw ValueError(layer.error_prefix() + "a temporary " + c->class_name +
                     " cannot be kept by a Functional model; keep it in a variable that outlives the model");
  }
  return c->move_to_heap(std::move(layer));
}

}  // namespace kestrel
