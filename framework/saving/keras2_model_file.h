// The Keras 2 full-model ".h5" file, as Keras 3 still writes it for model.save("m.h5"):
//
//   /                   attrs keras_version, backend, model_config (JSON), training_config (JSON,
//                       when the model is compiled)
//   /model_weights      the Keras 2 weights layout (keras2_format.h)
//   /optimizer_weights  the optimizer's variables, when it has any
//
//   keras2::write_model(model, temporary_path, "m.h5");
//   keras2::ModelConfigs configs = keras2::read_configs("m.h5", true);  // then the weights, by load_weights
//
// The configs are converted to and from Keras 3's by keras2_model_config.h, so one set of
// from_config functions makes models from either file.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "framework/model/model.h"

namespace kestrel::saving::keras2 {

/// Writes the model to os_path as it is (the caller makes the write atomic); display_path names
/// the file in errors. The model must be built.
void write_model(const Model& model, const std::string& os_path, const std::string& display_path);

/// What a full-model file says of its model, in Keras 3's form.
struct ModelConfigs {
  nlohmann::json model;           ///< the model's Keras object, as serialize_layer writes it
  nlohmann::json compile_config;  ///< null when the file has no training_config
};

/// Reads the configs of the file at path, the compile config only when `compile` (so that a
/// training config Kestrel cannot read does not keep the model from loading uncompiled). A file
/// without model_config (a weights file) or with configs that are not JSON is an error naming the
/// file and the attribute.
ModelConfigs read_configs(const std::string& path, bool compile);

}  // namespace kestrel::saving::keras2
