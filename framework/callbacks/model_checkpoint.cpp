#include "framework/callbacks/model_checkpoint.h"

#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "framework/callbacks/python_format.h"
#include "framework/core/error.h"
#include "framework/logging/logging.h"
#include "framework/model/model.h"
#include "framework/saving/model_file.h"
#include "framework/saving/weights_file.h"

namespace kestrel::callbacks {
namespace {

std::string format_best(double best) { return fmt::format("{:.5f}", best); }

}  // namespace

ModelCheckpoint::ModelCheckpoint(std::string filepath, ModelCheckpointOptions options)
    : filepath_(std::move(filepath)),
      options_(std::move(options)),
      direction_(detail::resolve_direction(options_.mode, options_.monitor, "ModelCheckpoint")),
      schedule_(options_.save_freq, "ModelCheckpoint") {
  if (!filepath_.ends_with(".h5") && !filepath_.ends_with(".keras")) {
    throw ValueError(
        "ModelCheckpoint: the filepath must end in \".keras\" (the whole model), \".weights.h5\" (weights, Keras 3 "
        "layout) or \".h5\" (the whole model in Keras 2's file; its weights alone with save_weights_only). Got '" +
        filepath_ + "'");
  }
  if (options_.save_weights_only && filepath_.ends_with(".keras")) {
    throw ValueError(
        "ModelCheckpoint: save_weights_only saves weights, so the filepath must end in \".weights.h5\", "
        "not \".keras\" (a whole-model file). Got '" +
        filepath_ + "'");
  }
  best_ = options_.initial_value_threshold ? *options_.initial_value_threshold : detail::worst_value(direction_);
}

std::string ModelCheckpoint::file_path(int epoch, std::optional<std::int64_t> batch, const Logs& logs) const {
  std::map<std::string, detail::FormatValue> values;
  for (const auto& [key, value] : logs) values[key] = value;
  values["epoch"] = std::int64_t{epoch} + 1;
  if (batch && logs.find("batch") == logs.end()) values["batch"] = *batch + 1;
  return detail::python_format(filepath_, values);
}

void ModelCheckpoint::on_epoch_begin(int epoch, const Logs& logs) { current_epoch_ = epoch; }

void ModelCheckpoint::on_epoch_end(int epoch, const Logs& logs) {
  if (schedule_.every_epoch()) save(epoch, std::nullopt, logs);
}

void ModelCheckpoint::on_train_batch_end(std::int64_t batch, const Logs& logs) {
  if (schedule_.due_after_batch(batch)) save(current_epoch_, batch, logs);
}

bool ModelCheckpoint::should_save(int epoch, const Logs& logs, const std::string& path) {
  auto log = logging::get("kestrel.callbacks");
  if (!options_.save_best_only) {
    if (options_.verbose > 0) log->info("Epoch {}: saving model to {}", epoch + 1, path);
    return true;
  }
  const std::optional<double> current = detail::find_value(logs, options_.monitor);
  if (!current) {
    log->warn("ModelCheckpoint can save the best model only with '{}' available; saving anyway. Available: {}",
              options_.monitor, detail::key_list(logs));
    return true;
  }
  if (detail::improves(direction_, *current, best_)) {
    if (options_.verbose > 0) {
      log->info("Epoch {}: {} improved from {} to {:.5f}, saving model to {}", epoch + 1, options_.monitor,
                format_best(best_), *current, path);
    }
    best_ = *current;
    return true;
  }
  if (options_.verbose > 0) {
    log->info("Epoch {}: {} did not improve from {}", epoch + 1, options_.monitor, format_best(best_));
  }
  return false;
}

void ModelCheckpoint::save(int epoch, std::optional<std::int64_t> batch, const Logs& logs) {
  const std::string path = file_path(epoch, batch, logs);
  if (!should_save(epoch, logs, path)) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    throw IOError("ModelCheckpoint: '" + path + "' is an existing directory; give a file path");
  }
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::exists(parent, ec)) {
    fs::create_directories(parent, ec);
    if (ec) throw IOError("ModelCheckpoint: cannot create directory '" + parent.string() + "': " + ec.message());
  }
  // The chief alone runs this callback: it writes without waiting for the other workers.
  // As in Keras 3: a ".keras" or ".h5" path holds the whole model unless save_weights_only; a
  // ".weights.h5" path is a weights file whatever the option says.
  if (options_.save_weights_only || path.ends_with(".weights.h5")) {
    saving::save_weights(model(), path);
  } else {
    saving::save_model(model(), path);
  }
  if (options_.verbose > 0) {
    logging::get("kestrel.callbacks")->info("Epoch {}: finished saving model to {}", epoch + 1, path);
  }
}

}  // namespace kestrel::callbacks
