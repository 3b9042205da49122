// EarlyStopping: stops fit when a monitored quantity has stopped improving, as
// keras.callbacks.EarlyStopping.
//
//   model.fit(x, y, {.epochs = 100, .validation_split = 0.1,
//                    .callbacks = {callbacks::EarlyStopping({.monitor = "val_loss", .patience = 3,
//                                                            .restore_best_weights = true})}});
//
// At each epoch end the monitored value either improves on the best by more than min_delta
// (the wait restarts) or counts one more epoch of waiting; after `patience` epochs without
// improvement it sets model.stop_training. With restore_best_weights the weights of the best
// epoch are put back when training ends.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "framework/callbacks/monitor.h"
#include "framework/core/tensor.h"
#include "framework/model/callback.h"

namespace kestrel::callbacks {

struct EarlyStoppingOptions {
  /// The log to watch ("val_loss", "accuracy", ...).
  std::string monitor = "val_loss";
  /// Changes smaller than this (in absolute value) do not count as improvement.
  double min_delta = 0.0;
  /// Epochs without improvement before stopping.
  int patience = 0;
  /// 1 logs when training stops and when weights are restored.
  int verbose = 0;
  /// "min", "max", or "auto" (max for accuracy-like names, min otherwise).
  std::string mode = "auto";
  /// A value the monitored quantity must beat for the wait to restart.
  std::optional<double> baseline = std::nullopt;
  /// Put back the weights of the best epoch when training ends.
  bool restore_best_weights = false;
  /// Epochs to run before watching (a warm-up in which no improvement is expected).
  int start_from_epoch = 0;
};

class EarlyStopping : public Callback {
 public:
  /// Throws ValueError for an unknown mode.
  explicit EarlyStopping(EarlyStoppingOptions options = {});

  void on_train_begin(const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_train_end(const Logs& logs) override;

  /// The epoch (0-based) at which training was stopped, or 0 when it was not.
  int stopped_epoch() const { return stopped_epoch_; }
  /// The epoch (0-based) with the best monitored value so far.
  int best_epoch() const { return best_epoch_; }
  /// The best monitored value so far (+-inf before the first).
  double best() const { return best_; }
  /// Epochs since the last improvement.
  int wait() const { return wait_; }

 private:
  bool is_improvement(double value, double reference) const;

  EarlyStoppingOptions options_;
  detail::Direction direction_;
  int wait_ = 0;
  int stopped_epoch_ = 0;
  int best_epoch_ = 0;
  double best_ = 0.0;
  std::vector<Tensor> best_weights_;
  bool have_best_weights_ = false;
};

}  // namespace kestrel::callbacks
