#include "framework/callbacks/learning_rate_scheduler.h"

#include <cmath>

#include "framework/core/error.h"
#include "framework/logging/logging.h"
#include "framework/model/model.h"
#include "framework/optimizers/optimizer.h"

namespace kestrel::callbacks {

LearningRateScheduler::LearningRateScheduler(Schedule schedule, LearningRateSchedulerOptions options)
    : schedule_(std::move(schedule)), options_(options) {
  if (!schedule_) throw ValueError("LearningRateScheduler: the schedule function is empty");
}

LearningRateScheduler::LearningRateScheduler(std::function<double(int epoch)> schedule,
                                             LearningRateSchedulerOptions options)
    : options_(options) {
  if (!schedule) throw ValueError("LearningRateScheduler: the schedule function is empty");
  schedule_ = [one = std::move(schedule)](int epoch, double) { return one(epoch); };
}

void LearningRateScheduler::on_epoch_begin(int epoch, const Logs& logs) {
  optimizers::Optimizer* optimizer = model().optimizer();
  if (optimizer == nullptr) {
    throw ValueError("LearningRateScheduler: model '" + model().name() + "' has no optimizer; compile it first");
  }
  const double lr = schedule_(epoch, optimizer->learning_rate());
  if (!std::isfinite(lr) || lr < 0.0) {
    throw ValueError("LearningRateScheduler: the schedule returned " + std::to_string(lr) + " for epoch " +
                     std::to_string(epoch) + "; a learning rate must be a finite number >= 0");
  }
  optimizer->set_learning_rate(lr);
  if (options_.verbose > 0) {
    logging::get("kestrel.callbacks")
        ->info("Epoch {}: LearningRateScheduler setting learning rate to {}.", epoch + 1, lr);
  }
}

}  // namespace kestrel::callbacks
