// Whole models in Keras 3's .keras archive, or Keras 2's full-model .h5 file: model.save(path) and
// load_model(path), the extension choosing the format as in Keras.
//
//   model.save("classifier.keras");                                   // config, weights, optimizer state
//   std::unique_ptr<Model> again = models::load_model("classifier.keras");
//   again->fit(x, y);                                                 // training goes on where it stopped
//   model.save("classifier.h5");                                      // the same, for Keras 2 readers
//
// The archive is a zip of metadata.json (keras_version, date_saved), config.json (the model as
// Keras's serialize_keras_object writes it, with compile_config when the model is compiled) and
// model.weights.h5 (the Keras 3 weights layout, with the optimizer's variables). Sequential and
// Functional models are made back from their configs; a subclassed model needs its class registered
// (KESTREL_REGISTER_SERIALIZABLE, layers/layer_classes.h). The save is atomic, as a weight file's.
// The .h5 file (keras2_model_file.h) holds the same: model_config, training_config, the Keras 2
// weights layout and the optimizer's variables; files tf.keras 2 wrote load too. A path ending in
// ".weights.h5" is a weights file, which save_weights and load_weights take.
#pragma once

#include <memory>
#include <string>

#include "framework/model/model.h"

namespace kestrel::saving {

struct LoadModelOptions {
  /// Compile the model as it was saved (its optimizer, loss and metrics), with its optimizer state.
  bool compile = true;
};

/// Writes the model to a .keras archive or a Keras 2 .h5 file; the model must be built.
void save_model(const Model& model, const std::string& path);

/// Makes the model a .keras archive or a Keras 2 .h5 file holds. A truncated or foreign file, a
/// config naming an unknown class, and weights that do not fit the config are errors naming the
/// file and what to do. An optimizer state that does not fit the optimizer the file compiles (a
/// tf.keras 2 one's variables differ) is skipped with a warning, as in Keras: training then starts
/// from a fresh optimizer state.
std::unique_ptr<Model> load_model(const std::string& path, LoadModelOptions options = {});

}  // namespace kestrel::saving

namespace kestrel::models {
// Keras offers load_model as keras.models.load_model and keras.saving.load_model alike.
using saving::load_model;
using saving::LoadModelOptions;
}  // namespace kestrel::models
