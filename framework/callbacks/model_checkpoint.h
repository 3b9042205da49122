// ModelCheckpoint: saves the model's weights during fit, as keras.callbacks.ModelCheckpoint.
//
//   model.fit(x, y, {.epochs = 20, .validation_split = 0.1,
//                    .callbacks = {callbacks::ModelCheckpoint("ckpt/{epoch:02d}-{val_loss:.4f}.weights.h5",
//                                                             {.save_best_only = true})}});
//   // ckpt/01-0.4211.weights.h5, ckpt/03-0.3907.weights.h5, ...
//
// The path is a Python format string filled with `epoch` (1-based), `batch` (1-based, when
// saving every N batches) and the logs ("{val_loss:.4f}", "{accuracy:.2%}"). As in Keras 3, a
// path ending in ".keras" saves the whole model (Model::save: config, weights, optimizer state),
// and one ending in ".weights.h5" (Keras 3 layout) or ".h5" (Keras 2) saves the weights with the
// optimizer state. Parent directories are created as needed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "framework/callbacks/monitor.h"
#include "framework/callbacks/save_schedule.h"
#include "framework/model/callback.h"

namespace kestrel::callbacks {

struct ModelCheckpointOptions {
  /// The log that decides "best" with save_best_only.
  std::string monitor = "val_loss";
  /// 1 logs each save (or why a save was skipped).
  int verbose = 0;
  /// Save only when the monitored value improves on the best so far.
  bool save_best_only = false;
  /// True saves only the weights (the path must end in ".h5"). Otherwise a ".keras" or ".h5" path
  /// saves the whole model (Keras 3's archive, Keras 2's file), and a ".weights.h5" path the weights.
  bool save_weights_only = false;
  /// "min", "max", or "auto" (max for accuracy-like names, min otherwise).
  std::string mode = "auto";
  /// "epoch", or a number of training batches between saves.
  detail::SaveFreq save_freq = "epoch";
  /// With save_best_only, the value the first save must beat.
  std::optional<double> initial_value_threshold = std::nullopt;
};

class ModelCheckpoint : public Callback {
 public:
  /// The chief of a multi-worker job alone runs it (Callback::chief_worker_only).
  bool chief_worker_only() const override { return true; }
  /// Throws ValueError for a path ending in neither ".keras" nor ".h5", a ".keras" path with
  /// save_weights_only, an unknown mode, or a bad save_freq.
  explicit ModelCheckpoint(std::string filepath, ModelCheckpointOptions options = {});

  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_train_batch_end(std::int64_t batch, const Logs& logs) override;

  /// The path for this epoch (0-based, written 1-based) and batch (0-based, when saving per batch);
  /// throws ValueError when the pattern names a value the logs lack.
  std::string file_path(int epoch, std::optional<std::int64_t> batch, const Logs& logs) const;
  /// The best monitored value so far (+-inf before the first, or the initial threshold).
  double best() const { return best_; }

 private:
  bool should_save(int epoch, const Logs& logs, const std::string& path);
  void save(int epoch, std::optional<std::int64_t> batch, const Logs& logs);

  std::string filepath_;
  ModelCheckpointOptions options_;
  detail::Direction direction_;
  detail::SaveSchedule schedule_;
  double best_ = 0.0;
  int current_epoch_ = 0;
};

}  // namespace kestrel::callbacks
