// Model's file methods: its weights, and the whole model. They are defined here, beside the file
// formats, rather than in framework/model/: saving builds on the model, and the model does not
// reach up into saving.
#include <exception>
#include <functional>

#include "framework/core/error.h"
#include "framework/distribute/distribution.h"
#include "framework/model/model.h"
#include "framework/saving/model_file.h"
#include "framework/saving/weights_file.h"

namespace kestrel {

namespace {

// Every worker of a multi-worker job holds the same model: the chief writes the file, and the
// others wait until it has (the collective below), so that a load after this reads the whole file
// on each.
void chief_writes(const Model& model, const std::string& method, const std::string& path,
                  const std::function<void()>& write) {
  // The strategy compiled under, or for a model not compiled, the one its weights were made in.
  const distribute::Distribution* distribution = model.distribution();
  if (const std::vector<Variable> all = model.weights(); distribution == nullptr && !all.empty()) {
    distribution = distribute::distribution_of(all.front());
  }
  if (distribution == nullptr || distribution->num_workers() == 1) {
    write();
    return;
  }
  std::exception_ptr failed;
  if (distribution->is_chief()) {
    try {
      write();
    } catch (...) {
      failed = std::current_exception();
    }
  }
  // Every worker learns whether the chief's write failed, and all throw: a worker that went on
  // alone would wait forever in a collective the others never reach.
  if (!distribution->any_worker(failed != nullptr)) return;
  if (failed) std::rethrow_exception(failed);
  throw IOError(method + "('" + path + "'): the chief (worker 0) could not write the file; its error says why");
}

}  // namespace

void Model::save_weights(const std::string& path) const {
  chief_writes(*this, "save_weights", path, [&] { saving::save_weights(*this, path); });
}

void Model::save(const std::string& path) const {
  chief_writes(*this, "save", path, [&] { saving::save_model(*this, path); });
}

void Model::load_weights(const std::string& path, LoadWeightsOptions options) {
  saving::load_weights(*this, path, options);
}

}  // namespace kestrel
