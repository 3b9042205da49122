// ReduceLROnPlateau: lowers the optimizer's learning rate when a monitored quantity stops
// improving, as keras.callbacks.ReduceLROnPlateau.
//
//   model.fit(x, y, {.epochs = 50, .validation_split = 0.1,
//                    .callbacks = {callbacks::ReduceLROnPlateau({.factor = 0.2, .patience = 5,
//                                                                .min_lr = 1e-5})}});
//
// After `patience` epochs without an improvement larger than min_delta the rate becomes
// max(rate * factor, min_lr); then `cooldown` epochs pass before waiting starts again. The model's
// optimizer must have a constant rate (a schedule cannot be set; ValueError).
#pragma once

#include <string>

#include "framework/callbacks/monitor.h"
#include "framework/model/callback.h"

namespace kestrel::callbacks {

struct ReduceLROnPlateauOptions {
  std::string monitor = "val_loss";
  /// new rate = rate * factor; must be below 1.
  double factor = 0.1;
  /// Epochs without improvement before the rate is reduced.
  int patience = 10;
  /// 1 logs each reduction.
  int verbose = 0;
  /// "min", "max", or "auto" (max for accuracy-like names, min otherwise).
  std::string mode = "auto";
  /// An improvement must beat the best by more than this.
  double min_delta = 1e-4;
  /// Epochs after a reduction before waiting starts again.
  int cooldown = 0;
  /// The rate never goes below this.
  double min_lr = 0.0;
};

class ReduceLROnPlateau : public Callback {
 public:
  /// Throws ValueError for factor >= 1 or an unknown mode.
  explicit ReduceLROnPlateau(ReduceLROnPlateauOptions options = {});

  void on_train_begin(const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;

  /// The best monitored value so far.
  double best() const { return best_; }
  /// Epochs since the last improvement (or reduction).
  int wait() const { return wait_; }
  bool in_cooldown() const { return cooldown_counter_ > 0; }

 private:
  void reset();

  ReduceLROnPlateauOptions options_;
  detail::Direction direction_;
  double best_ = 0.0;
  int wait_ = 0;
  int cooldown_counter_ = 0;
};

}  // namespace kestrel::callbacks
