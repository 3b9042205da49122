#include "framework/model/sequential.h"

#include <algorithm>
#include <optional>

#include "framework/core/error.h"
#include "framework/layers/input_layer.h"
#include "framework/layers/layer_classes.h"
#include "framework/layers/serialization.h"

namespace kestrel {
namespace {

// Sequential among the layer classes, so a config holding one (alone, or as a layer of another
// model) reads back. A Sequential cannot be moved: it is kept by the variable that holds it.
const detail::LayerClassRegistrar kSequentialClass{
    LayerClass{.package = "keras",
               .class_name = "Sequential",
               .type = std::type_index(typeid(Sequential)),
               .move_to_heap = nullptr,
               .from_config = [](const nlohmann::json& config) -> std::unique_ptr<Layer> {
                 return Sequential::from_config(config);
               },
               .builtin = true,
               .registered_name = std::nullopt}};

}  // namespace

Sequential::Sequential(std::string name) : Model(std::move(name), "Sequential") {}

Sequential::Sequential(std::initializer_list<LayerArg> layers, std::string name)
    : Model(std::move(name), "Sequential") {
  for (const LayerArg& layer : layers) layer.adopt_(*this);
}

Layer& Sequential::add(std::unique_ptr<Layer> layer) {
  if (!layer) throw ValueError("model '" + name() + "' (Sequential): add() was given no layer");
  Layer& added = *layer;
  adopt(std::move(layer));
  return added;
}

Tensor Sequential::call(const Inputs& inputs, bool training) {
  if (layers().empty()) {
    throw ValueError("model '" + name() + "' (Sequential) has no layers; add some with model.add(layers::Dense(10))");
  }
  Tensor h = inputs.tensor();
  for (Layer* layer : layers()) h = (*layer)(h, training);
  return h;
}

nlohmann::json Sequential::get_config() const {
  nlohmann::json config = Layer::get_config();
  nlohmann::json layer_configs = nlohmann::json::array();
  const bool has_input_shape = !layers().empty() && layers().front()->build_input_shapes().size() == 1;
  if (has_input_shape) {
    // Keras lists the model's InputLayer first; Kestrel's Sequential has none, so it is written
    // from the shape the first layer was built for.
    const Shape& input_shape = layers().front()->build_input_shapes().front();
    layer_configs.push_back(
        serialization::keras_object("keras.layers", "InputLayer",
                                    {{"batch_shape", serialization::batch_shape_to_config(input_shape)},
                                     {"dtype", "float32"},
                                     {"sparse", false},
                                     {"name", "input_layer"}}));
    config["build_input_shape"] = serialization::batch_shape_to_config(input_shape);
  }
  for (const Layer* layer : layers()) layer_configs.push_back(serialization::serialize_layer(*layer));
  config["layers"] = std::move(layer_configs);
  return config;
}

std::unique_ptr<Sequential> Sequential::from_config(const nlohmann::json& config) {
  const std::string what = "model class 'Sequential'";
  const serialization::LayerBase base = serialization::layer_base_from_config(config, what);
  auto model = std::make_unique<Sequential>(base.name);
  std::optional<Shape> input_shape;
  for (const nlohmann::json& object : serialization::required<nlohmann::json>(config, "layers", what)) {
    if (object.value("class_name", "") == "InputLayer") {
      input_shape = serialization::shape_from_config(
          serialization::required<nlohmann::json>(
              object.at("config"), object.at("config").contains("batch_shape") ? "batch_shape" : "batch_input_shape",
              what),
          1, what);
      continue;
    }
    model->add(serialization::deserialize_layer(object));
  }
  if (!input_shape && config.contains("build_input_shape") && !config.at("build_input_shape").is_null()) {
    input_shape = serialization::shape_from_config(config.at("build_input_shape"), 1, what);
  }
  // Each layer built from its own build_config needs no forward pass; else one builds them all.
  const bool all_built =
      std::all_of(model->layers().begin(), model->layers().end(), [](const Layer* layer) { return layer->built(); });
  if (all_built && !model->layers().empty()) {
    model->mark_built();
    model->tie_weights();
  } else if (input_shape) {
    model->build(*input_shape);
  }
  model->set_trainable(base.trainable);
  return model;
}

}  // namespace kestrel
