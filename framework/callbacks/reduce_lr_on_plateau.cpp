#include "framework/callbacks/reduce_lr_on_plateau.h"

#include <algorithm>

#include "framework/core/error.h"
#include "framework/logging/logging.h"
#include "framework/model/model.h"
#include "framework/optimizers/optimizer.h"

namespace kestrel::callbacks {

ReduceLROnPlateau::ReduceLROnPlateau(ReduceLROnPlateauOptions options)
    : options_(std::move(options)),
      direction_(detail::resolve_direction(options_.mode, options_.monitor, "ReduceLROnPlateau")) {
  if (!(options_.factor < 1.0)) {
    throw ValueError("ReduceLROnPlateau: factor must be below 1.0 (the rate is multiplied by it), got " +
                     std::to_string(options_.factor));
  }
  reset();
}

void ReduceLROnPlateau::reset() {
  best_ = detail::worst_value(direction_);
  wait_ = 0;
  cooldown_counter_ = 0;
}

void ReduceLROnPlateau::on_train_begin(const Logs& logs) { reset(); }

void ReduceLROnPlateau::on_epoch_end(int epoch, const Logs& logs) {
  const std::optional<double> current = detail::find_value(logs, options_.monitor);
  if (!current) {
    logging::get("kestrel.callbacks")
        ->warn("ReduceLROnPlateau is conditioned on '{}', which is not in the logs. Available: {}", options_.monitor,
               detail::key_list(logs));
    return;
  }
  if (in_cooldown()) {
    --cooldown_counter_;
    wait_ = 0;
  }
  const double threshold =
      direction_ == detail::Direction::min ? best_ - options_.min_delta : best_ + options_.min_delta;
  if (detail::improves(direction_, *current, threshold)) {
    best_ = *current;
    wait_ = 0;
    return;
  }
  if (in_cooldown()) return;
  if (++wait_ < options_.patience) return;
  optimizers::Optimizer* optimizer = model().optimizer();
  if (optimizer == nullptr) {
    throw ValueError("ReduceLROnPlateau: model '" + model().name() + "' has no optimizer; compile it first");
  }
  const double old_lr = optimizer->learning_rate();
  // The rate is stored as float32, so min_lr is compared at that precision.
  if (old_lr > static_cast<double>(static_cast<float>(options_.min_lr))) {
    const double new_lr = std::max(old_lr * options_.factor, options_.min_lr);
    optimizer->set_learning_rate(new_lr);
    if (options_.verbose > 0) {
      logging::get("kestrel.callbacks")
          ->info("Epoch {}: ReduceLROnPlateau reducing learning rate to {}.", epoch + 1, new_lr);
    }
    cooldown_counter_ = options_.cooldown;
    wait_ = 0;
  }
}

}  // namespace kestrel::callbacks
