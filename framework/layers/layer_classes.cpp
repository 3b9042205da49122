#include "framework/layers/layer_classes.h"

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
#include "framework/layers/input_layer.h"
#include "framework/layers/layer.h"
#include "framework/layers/layer_normalization.h"
#include "framework/layers/permute.h"
#include "framework/layers/pooling.h"
#include "framework/layers/reshape.h"
#include "framework/layers/up_sampling2d.h"
#include "framework/layers/zero_padding2d.h"

namespace kestrel {
namespace {

std::vector<LayerClass> builtin_classes() {
  const std::string keras = "keras.layers";
  return {
      layer_class<layers::Activation>(keras, "Activation"),
      layer_class<layers::AveragePooling2D>(keras, "AveragePooling2D"),
      layer_class<layers::BatchNormalization>(keras, "BatchNormalization"),
      layer_class<layers::Conv1D>(keras, "Conv1D"),
      layer_class<layers::Conv2D>(keras, "Conv2D"),
      layer_class<layers::Dense>(keras, "Dense"),
      layer_class<layers::Dropout>(keras, "Dropout"),
      layer_class<layers::Embedding>(keras, "Embedding"),
      layer_class<layers::Flatten>(keras, "Flatten"),
      layer_class<layers::GlobalAveragePooling1D>(keras, "GlobalAveragePooling1D"),
      layer_class<layers::GlobalAveragePooling2D>(keras, "GlobalAveragePooling2D"),
      layer_class<layers::GlobalMaxPooling1D>(keras, "GlobalMaxPooling1D"),
      layer_class<layers::GlobalMaxPooling2D>(keras, "GlobalMaxPooling2D"),
      layer_class<layers::InputLayer>(keras, "InputLayer"),
      layer_class<layers::LayerNormalization>(keras, "LayerNormalization"),
      layer_class<layers::MaxPooling2D>(keras, "MaxPooling2D"),
      layer_class<layers::Permute>(keras, "Permute"),
      layer_class<layers::Reshape>(keras, "Reshape"),
      layer_class<layers::UpSampling2D>(keras, "UpSampling2D"),
      layer_class<layers::ZeroPadding2D>(keras, "ZeroPadding2D"),
  };
}

struct Registry {
  std::mutex mutex;
  std::map<std::type_index, LayerClass> by_type;
  std::map<std::string, std::type_index> by_name;
  bool builtins_added = false;
};

Registry& registry() {
  static Registry r;
  return r;
}

void add_locked(Registry& r, LayerClass c) {
  const std::string name = c.registered_name();
  const auto named = r.by_name.find(name);
  if (named != r.by_name.end() && named->second != c.type) {
    throw ValueError("layer class '" + name +
                     "' is registered twice, for two different C++ classes; give one of them another package or name");
  }
  r.by_name.emplace(name, c.type);
  r.by_type.emplace(c.type, std::move(c));
}

void add_builtins_locked(Registry& r) {
  if (r.builtins_added) return;
  r.builtins_added = true;
  for (LayerClass& c : builtin_classes()) add_locked(r, std::move(c));
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

std::shared_ptr<Layer> move_to_heap(Layer&& layer) {
  const LayerClass* c = find_layer_class(std::type_index(typeid(layer)));
  if (c == nullptr) {
    throw ValueError(layer.error_prefix() +
                     "a temporary layer was called on a Keras tensor, and a Functional model must keep it, but its "
                     "C++ class is not registered; keep the layer in a variable that outlives the model, or add "
                     "KESTREL_REGISTER_SERIALIZABLE(\"your_package\", YourClass) after the class's definition");
  }
  return c->move_to_heap(std::move(layer));
}

}  // namespace kestrel
