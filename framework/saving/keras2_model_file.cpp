#include "framework/saving/keras2_model_file.h"

#include "framework/core/error.h"
#include "framework/layers/serialization.h"
#include "framework/model/compile_config.h"
#include "framework/saving/hdf5_handles.h"
#include "framework/saving/keras2_format.h"
#include "framework/saving/keras2_model_config.h"
#include "framework/saving/weights_file.h"

namespace kestrel::saving::keras2 {
namespace {

constexpr const char* kModelConfig = "model_config";
constexpr const char* kTrainingConfig = "training_config";

/// A JSON config as one root attribute, as Keras writes it (UTF-8 bytes).
void write_json(const h5::Group& root, const char* name, const nlohmann::json& value, const Model& model) {
  const std::string text = value.dump();
  if (text.size() > kAttributeLimit) {
    throw ValueError(in_quotes(root.file_name()) + ": model '" + model.name() + "' has a " + name + " of " +
                     std::to_string(text.size()) + " bytes, more than an HDF5 attribute holds (" +
                     std::to_string(kAttributeLimit) + "); save it as a .keras archive, which has no such limit");
  }
  root.write_bytes(name, text);
}

nlohmann::json read_json(const h5::Group& root, const char* name) {
  const std::string text = root.read_string(name);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw ValueError(in_quotes(root.file_name()) + ": its " + name + " attribute is not valid JSON (" + e.what() +
                     "); the file is damaged or was not written as a Keras model file");
  }
}

}  // namespace

void write_model(const Model& model, const std::string& os_path, const std::string& display_path) {
  const nlohmann::json object = serialization::serialize_layer(model);
  h5::silence_errors();
  h5::File file = h5::File::create(os_path, display_path);
  {
    const h5::Group root = file.root();  // closed before the file is
    root.write_bytes("keras_version", kKerasVersion);
    root.write_bytes("backend", "tensorflow");
    write_json(root, kModelConfig, model_config_from_keras3(object), model);
    if (model.compiled()) write_json(root, kTrainingConfig, training_config_from_keras3(compile_config(model)), model);
    save_layers(root.create_group("model_weights"), model);
    if (const optimizers::Optimizer* optimizer = optimizer_to_save(model)) save_optimizer(root, *optimizer);
  }
  file.close();
}

ModelConfigs read_configs(const std::string& path, bool compile) {
  h5::silence_errors();
  const h5::File file = h5::File::open(path);
  const h5::Group root = file.root();
  if (!root.has_attribute(kModelConfig)) {
    throw ValueError(in_quotes(path) +
                     ": the file has no model_config attribute, so it holds weights, not a model; "
                     "make the model in code and call load_weights(\"" +
                     path + "\")");
  }
  ModelConfigs out;
  out.model = keras3_model_object(read_json(root, kModelConfig), in_quotes(path));
  if (compile && root.has_attribute(kTrainingConfig)) {
    out.compile_config = keras3_compile_config(read_json(root, kTrainingConfig), in_quotes(path));
  }
  return out;
}

}  // namespace kestrel::saving::keras2
