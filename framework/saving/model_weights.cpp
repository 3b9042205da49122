// Model's weight-file methods. They are defined here, beside the file formats, rather than in
// framework/model/: saving builds on the model, and the model does not reach up into saving.
#include <exception>

#include "framework/core/error.h"
#include "framework/distribute/distribution.h"
#include "framework/model/model.h"
#include "framework/saving/weights_file.h"

namespace kestrel {

void Model::save_weights(const std::string& path) const {
  // Every worker of a multi-worker job holds the same weights: the chief writes them, and the
  // others wait until it has (the collective below), so that a load_weights after this reads the
  // whole file on each.
  // The strategy compiled under, or for a model not compiled, the one its weights were made in.
  const distribute::Distribution* distribution = this->distribution();
  if (const std::vector<Variable> all = weights(); distribution == nullptr && !all.empty()) {
    distribution = distribute::distribution_of(all.front());
  }
  if (distribution == nullptr || distribution->num_workers() == 1) {
    saving::save_weights(*this, path);
    return;
  }
  std::exception_ptr failed;
  if (distribution->is_chief()) {
    try {
      saving::save_weights(*this, path);
    } catch (...) {
      failed = std::current_exception();
    }
  }
  // Every worker learns whether the chief's write failed, and all throw: a worker that went on
  // alone would wait forever in a collective the others never reach.
  if (!distribution->any_worker(failed != nullptr)) return;
  if (failed) std::rethrow_exception(failed);
  throw IOError("save_weights('" + path + "'): the chief (worker 0) could not write the file; its error says why");
}

void Model::load_weights(const std::string& path, LoadWeightsOptions options) {
  saving::load_weights(*this, path, options);
}

}  // namespace kestrel
