// Model's weight-file methods. They are defined here, beside the file formats, rather than in
// framework/model/: saving builds on the model, and the model does not reach up into saving.
#include "framework/model/model.h"
#include "framework/saving/weights_file.h"

namespace kestrel {

void Model::save_weights(const std::string& path) const { saving::save_weights(*this, path); }

void Model::load_weights(const std::string& path, LoadWeightsOptions options) {
  saving::load_weights(*this, path, options);
}

}  // namespace kestrel
