// LearningRateScheduler: sets the optimizer's learning rate at the start of each epoch from a
// function of the epoch, as keras.callbacks.LearningRateScheduler.
//
//   auto halve_after_10 = [](int epoch, double lr) { return epoch < 10 ? lr : lr * 0.5; };
//   model.fit(x, y, {.epochs = 20, .callbacks = {callbacks::LearningRateScheduler(halve_after_10)}});
//   callbacks::LearningRateScheduler([](int epoch) { return 1e-3 * std::pow(0.9, epoch); });
//
// epoch is 0-based; lr is the optimizer's current rate. The optimizer must have a constant rate
// (a schedule cannot be set; ValueError).
#pragma once

#include <functional>

#include "framework/model/callback.h"

namespace kestrel::callbacks {

struct LearningRateSchedulerOptions {
  /// 1 logs each rate set.
  int verbose = 0;
};

class LearningRateScheduler : public Callback {
 public:
  using Schedule = std::function<double(int epoch, double lr)>;

  /// schedule(epoch, current rate) -> new rate.
  explicit LearningRateScheduler(Schedule schedule, LearningRateSchedulerOptions options = {});
  /// schedule(epoch) -> new rate (Keras's older one-argument form).
  explicit LearningRateScheduler(std::function<double(int epoch)> schedule, LearningRateSchedulerOptions options = {});

  void on_epoch_begin(int epoch, const Logs& logs) override;

 private:
  Schedule schedule_;
  LearningRateSchedulerOptions options_;
};

}  // namespace kestrel::callbacks
