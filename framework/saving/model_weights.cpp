// Model's weight-file methods. They are defined here, beside the file formats, rather than in
// framework/model/: saving builds on the model, and the model does not reach up into saving.
#include <exception>

#include "framework/distribute/distribution.h"
#include "framework/model/model.h"
#include "framework/saving/weights_file.h"

namespace kestrel {

void Model::save_weights(const std::string& path) const {
  // Every worker of a multi-worker job holds the same weights: the chief writes them, and the
  // others wait until it has, so that a load_weights after this reads the whole file on each.
  const distribute::Distribution* distribution = this->distribution();
  if (distribution == nullptr || distribution->num_workers() == 1) {
    saving::save_weights(*this, path);
    return;
  }
  std::exception_ptr failed;
  if (distribution->worker_index() == 0) {
    try {
      saving::save_weights(*this, path);
    } catch (...) {
      failed = std::current_exception();
    }
  }
  // Every worker reaches the barrier, the chief too when its write failed, so none waits forever.
  distribution->wait_for_workers("save_weights('" + path + "')");
  if (failed) std::rethrow_exception(failed);
}

void Model::load_weights(const std::string& path, LoadWeightsOptions options) {
  saving::load_weights(*this, path, options);
}

}  // namespace kestrel
