#include "framework/saving/weights_file.h"

#include <mutex>
#include <optional>

#include "framework/core/error.h"
#include "framework/logging/logging.h"
#include "framework/optimizers/optimizer.h"
#include "framework/saving/atomic_write.h"
#include "framework/saving/hdf5_handles.h"
#include "framework/saving/keras2_format.h"
#include "framework/saving/keras3_format.h"

namespace kestrel::saving {
namespace {

using Layout = WeightsLayout;

Layout layout_for(const std::string& path) {
  if (path.ends_with(".weights.h5")) return Layout::keras3;
  if (path.ends_with(".h5")) return Layout::keras2;
  throw ValueError(in_quotes(path) +
                   ": weight files end in \".weights.h5\" (Keras 3 layout) or \".h5\" (Keras 2 layout)");
}

void require_built(const Model& model, const char* method) {
  if (!model.built()) {
    throw ValueError("model '" + model.name() + "' has no weights yet: call it on data or build() first, then " +
                     method + "()");
  }
}

/// One load at a time (saves are serialized by write_atomically).
std::mutex& load_mutex() {
  static std::mutex mutex;
  return mutex;
}

void write_file(const Model& model, const std::string& os_path, const std::string& path, Layout layout) {
  const optimizers::Optimizer* optimizer = optimizer_to_save(model);
  h5::File file = h5::File::create(os_path, path);
  {
    const h5::Group root = file.root();  // closed before the file is
    if (layout == Layout::keras3) {
      keras3::save(root, model, optimizer);
    } else {
      keras2::save_layers(root, model);
      if (optimizer != nullptr) keras2::save_optimizer(root, *optimizer);
    }
  }
  file.close();
}

/// Values for the optimizer's variables from the file; builds the optimizer first if it has no slots.
void read_optimizer_state(Model& model, const std::vector<h5::Dataset>& state, const std::string& path,
                          bool skip_mismatch, Values& out) {
  optimizers::Optimizer* optimizer = model.optimizer();
  if (optimizer == nullptr) {
    logging::get("kestrel.saving")
        ->debug("{}: model '{}' is not compiled; the file's optimizer state is not loaded", path, model.name());
    return;
  }
  if (!optimizer->built()) optimizer->build(model.trainable_weights());
  const std::vector<Variable> variables = optimizer->variables();
  if (variables.size() != state.size()) {
    std::string message = in_quotes(path) + ": optimizer '" + optimizer->name() + "' has " +
                          std::to_string(variables.size()) + " variables, the file's optimizer state has " +
                          std::to_string(state.size()) + "; compile with the optimizer that saved the file";
    if (!skip_mismatch) throw ValueError(message);
    logging::get("kestrel.saving")
        ->warn("skipping the optimizer state (training starts from a fresh one): {}", message);
    return;
  }
  Values values;
  for (std::size_t i = 0; i < variables.size(); ++i) {
    const Shape stored = state[i].shape();
    if (stored != variables[i].shape()) {
      std::string message = in_quotes(path) + ": optimizer variable '" + variables[i].name() + "' is " +
                            variables[i].shape().to_string() + " in the model but " + stored.to_string() +
                            " in the file (" + state[i].path() + ")";
      if (!skip_mismatch) throw ShapeError(message);
      logging::get("kestrel.saving")
          ->warn("skipping the optimizer state (training starts from a fresh one): {}", message);
      return;
    }
    values.push_back(read_value(state[i], variables[i]));
  }
  out.insert(out.end(), values.begin(), values.end());
}

/// What a load does with an optimizer state that does not fit the model's optimizer.
enum class StateMismatch { fail, skip };

void read_file(Model& model, const std::string& os_path, const std::string& path, Layout layout,
               const LoadWeightsOptions& options, StateMismatch state_mismatch = StateMismatch::fail) {
  require_built(model, "load_weights");
  const std::lock_guard<std::mutex> lock(load_mutex());
  h5::silence_errors();
  const h5::File file = h5::File::open(os_path, path);
  const h5::Group root = file.root();
  Values values;
  std::optional<std::vector<h5::Dataset>> state;
  if (layout == Layout::keras3) {
    values = keras3::read_layers(root, model, options);
    state = keras3::optimizer_state(root);
  } else {
    values = keras2::read_layers(root, model, options);
    state = keras2::optimizer_state(root);
  }
  if (state) {
    read_optimizer_state(model, *state, path, options.skip_mismatch || state_mismatch == StateMismatch::skip, values);
  }
  // Everything was read and checked: only now does the model change.
  assign_values(values, path);
}

}  // namespace

const optimizers::Optimizer* optimizer_to_save(const Model& model) {
  return model.compiled() && model.optimizer()->built() ? model.optimizer() : nullptr;
}

void save_weights(const Model& model, const std::string& path) {
  const Layout layout = layout_for(path);
  require_built(model, "save_weights");
  h5::silence_errors();
  write_atomically(path, [&](const std::string& temporary) { write_file(model, temporary, path, layout); });
}

void write_keras3_weights(const Model& model, const std::string& os_path, const std::string& display_path) {
  require_built(model, "save");
  h5::silence_errors();
  write_file(model, os_path, display_path, Layout::keras3);
}

void load_weights(Model& model, const std::string& path, const LoadWeightsOptions& options) {
  read_file(model, path, path, layout_for(path), options);
}

void read_model_file_weights(Model& model, const std::string& os_path, const std::string& display_path,
                             WeightsLayout layout) {
  read_file(model, os_path, display_path, layout, {}, StateMismatch::skip);
}

}  // namespace kestrel::saving
