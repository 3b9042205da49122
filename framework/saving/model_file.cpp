#include "framework/saving/model_file.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/io/zip_archive.h"
#include "framework/layers/serialization.h"
#include "framework/model/compile_config.h"
#include "framework/saving/atomic_write.h"
#include "framework/saving/keras2_model_file.h"
#include "framework/saving/save_temporaries.h"
#include "framework/saving/weights_file.h"

namespace kestrel::saving {
namespace {

// The Keras version whose .keras layout Kestrel writes.
constexpr const char* kKeras3Version = "3.5.0";
constexpr const char* kConfigEntry = "config.json";
constexpr const char* kMetadataEntry = "metadata.json";
constexpr const char* kWeightsEntry = "model.weights.h5";

enum class ModelFormat { keras_archive, keras2_h5 };

ModelFormat format_for(const std::string& path, const char* action) {
  if (path.ends_with(".keras")) return ModelFormat::keras_archive;
  if (path.ends_with(".h5") && !path.ends_with(".weights.h5")) return ModelFormat::keras2_h5;
  throw ValueError(in_quotes(path) + ": " + action +
                   " takes a .keras archive (Keras 3's model file) or a .h5 file (Keras 2's); for weights alone "
                   "use save_weights / load_weights with \".weights.h5\"");
}

// "2026-11-27@03:40:00", as Keras stamps date_saved.
std::string now_stamp() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm local{};
  localtime_r(&now, &local);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d@%H:%M:%S", &local);
  return text;
}

// Removes a scratch file when the scope ends, however it ends.
class ScratchFile {
 public:
  explicit ScratchFile(std::string path) : path_(std::move(path)) {}
  ~ScratchFile() { std::remove(path_.c_str()); }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

nlohmann::json parse_json(const std::string& text, const std::string& path, const char* entry) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw ValueError(in_quotes(path) + ": its " + entry + " is not valid JSON (" + e.what() +
                     "); the archive is damaged or was not written as a Keras model file");
  }
}

/// The model a Keras object describes, built, and compiled as compile_config says when asked to.
/// `compile_entry` names where the compile config was read ("config.json", "training_config").
std::unique_ptr<Model> model_from_configs(const nlohmann::json& object, const nlohmann::json& compile_config,
                                          const LoadModelOptions& options, const std::string& path,
                                          const char* compile_entry) {
  std::unique_ptr<Layer> layer;
  try {
    layer = serialization::deserialize_layer(object);
  } catch (const ValueError& e) {
    throw ValueError(in_quotes(path) + ": " + e.what());
  }
  if (dynamic_cast<Model*>(layer.get()) == nullptr) {
    throw ValueError(in_quotes(path) + ": its config describes a " + layer->class_name() +
                     " layer, not a model; save a model (Sequential, Functional or a Model subclass)");
  }
  std::unique_ptr<Model> out(static_cast<Model*>(layer.release()));
  if (!out->built()) {
    throw ValueError(in_quotes(path) + ": model '" + out->name() +
                     "' could not be built from its config (no input shape is recorded); it was saved before it "
                     "was called on data");
  }
  if (options.compile && !compile_config.is_null()) {
    try {
      out->compile(compile_options_from_config(compile_config, out->output_names(), compile_entry));
    } catch (const ValueError& e) {
      throw ValueError(in_quotes(path) + ": " + e.what());
    }
  }
  return out;
}

}  // namespace

void save_model(const Model& model, const std::string& path) {
  const ModelFormat format = format_for(path, "save");
  if (!model.built()) {
    throw ValueError("model '" + model.name() + "' has no weights yet: call it on data or build() first, then save()");
  }
  if (format == ModelFormat::keras2_h5) {
    write_atomically(path, [&](const std::string& temporary) { keras2::write_model(model, temporary, path); });
    return;
  }
  nlohmann::json config = serialization::serialize_layer(model);
  if (model.compiled()) config["compile_config"] = compile_config(model);
  const nlohmann::json metadata = {{"keras_version", kKeras3Version}, {"date_saved", now_stamp()}};
  write_atomically(path, [&](const std::string& temporary) {
    const ScratchFile weights(temporary + ".weights.h5");
    write_keras3_weights(model, weights.path(), path + " (" + kWeightsEntry + ")");
    io::ZipWriter archive(temporary, {.display_name = path});
    archive.add(kMetadataEntry, metadata.dump());
    archive.add(kConfigEntry, config.dump());
    archive.add_file(kWeightsEntry, weights.path());
    archive.close();
  });
}

std::unique_ptr<Model> load_model(const std::string& path, LoadModelOptions options) {
  if (format_for(path, "load_model") == ModelFormat::keras2_h5) {
    const keras2::ModelConfigs configs = keras2::read_configs(path, options.compile);
    std::unique_ptr<Model> out =
        model_from_configs(configs.model, configs.compile_config, options, path, "training_config");
    read_model_file_weights(*out, path, path, WeightsLayout::keras2);  // /model_weights, /optimizer_weights
    return out;
  }
  const io::ZipReader archive(path);
  const nlohmann::json config = parse_json(archive.read(kConfigEntry), path, kConfigEntry);
  std::unique_ptr<Model> out =
      model_from_configs(config, config.value("compile_config", nlohmann::json()), options, path, kConfigEntry);
  // The weights, and when the model is compiled its optimizer's state: training goes on exactly.
  const ScratchFile weights(temporary_path(path) + ".weights.h5");
  archive.extract(kWeightsEntry, weights.path());
  read_model_file_weights(*out, weights.path(), path + " (" + kWeightsEntry + ")", WeightsLayout::keras3);
  return out;
}

}  // namespace kestrel::saving
