// Weight files in Keras's HDF5 layouts: what Model::save_weights and Model::load_weights run.
//
//   saving::save_weights(model, "ckpt.weights.h5");     // Keras 3 layout, with optimizer state
//   saving::save_weights(model, "ckpt.h5");             // Keras 2 layout
//   saving::load_weights(model, "ckpt.h5", {.by_name = true, .skip_mismatch = true});
//
// The extension picks the layout (".weights.h5": Keras 3, other ".h5": Keras 2); files written
// by Keras or h5py in either layout load too. A save writes "<path>.tmp-<host>-<pid>", syncs it
// and renames it over path, so a crash never leaves half a file; the next save of path removes
// the temporaries that killed processes left. Optimizer state is saved when the model is
// compiled and its optimizer built; loading it builds the optimizer if needed, so training
// resumes exactly. A load checks every count and shape before assigning anything.
#pragma once

#include <string>

#include "framework/model/model.h"

namespace kestrel::saving {

/// Writes the model's weights (and optimizer state) to path; the model must be built.
void save_weights(const Model& model, const std::string& path);

/// Writes the Keras 3 layout of the model's weights (and optimizer state) to os_path as it is, not
/// atomically: the weights inside a .keras archive. display_path names the file in errors.
void write_keras3_weights(const Model& model, const std::string& os_path, const std::string& display_path);

enum class WeightsLayout { keras2, keras3 };

/// What load_model reads of a model file: the weights in `layout` from os_path (a .keras
/// archive's, extracted, or a Keras 2 file's /model_weights), strictly, and the optimizer state
/// where it fits the model's optimizer. A state that does not fit (tf.keras 2's optimizers keep
/// other variables than Keras 3's) is skipped with a warning, as Keras's load_model does: training
/// then starts from a fresh optimizer state. display_path names the file in errors.
void read_model_file_weights(Model& model, const std::string& os_path, const std::string& display_path,
                             WeightsLayout layout);

/// The optimizer whose state a save writes: the model's once compiled and built (it has slots),
/// else null.
const optimizers::Optimizer* optimizer_to_save(const Model& model);

/// Reads weights (and optimizer state, when the model is compiled) from path into the model.
void load_weights(Model& model, const std::string& path, const LoadWeightsOptions& options = {});

}  // namespace kestrel::saving
