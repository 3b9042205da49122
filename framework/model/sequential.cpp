#include "framework/model/sequential.h"

#include "framework/core/error.h"

namespace kestrel {

Sequential::Sequential(std::string name) : Model(std::move(name), "Sequential") {}

Sequential::Sequential(std::initializer_list<LayerArg> layers, std::string name)
    : Model(std::move(name), "Sequential") {
  for (const LayerArg& layer : layers) layer.adopt_(*this);
}

Tensor Sequential::call(const Inputs& inputs, bool training) {
  if (layers().empty()) {
    throw ValueError("model '" + name() + "' (Sequential) has no layers; add some with model.add(layers::Dense(10))");
  }
  Tensor h = inputs.tensor();
  for (Layer* layer : layers()) h = (*layer)(h, training);
  return h;
}

}  // namespace kestrel
