#include "framework/callbacks/early_stopping.h"

#include <cmath>

#include "framework/logging/logging.h"
#include "framework/model/model.h"

namespace kestrel::callbacks {

EarlyStopping::EarlyStopping(EarlyStoppingOptions options)
    : options_(std::move(options)),
      direction_(detail::resolve_direction(options_.mode, options_.monitor, "EarlyStopping")) {
  options_.min_delta = std::abs(options_.min_delta);
  best_ = detail::worst_value(direction_);
}

bool EarlyStopping::is_improvement(double value, double reference) const {
  // Better by more than min_delta: shift the value against the direction before comparing.
  const double shifted = direction_ == detail::Direction::min ? value + options_.min_delta : value - options_.min_delta;
  return detail::improves(direction_, shifted, reference);
}

void EarlyStopping::on_train_begin(const Logs& logs) {
  // Reset, so one instance can serve several fits.
  wait_ = 0;
  stopped_epoch_ = 0;
  best_epoch_ = 0;
  best_ = detail::worst_value(direction_);
  best_weights_.clear();
  have_best_weights_ = false;
}

void EarlyStopping::on_epoch_end(int epoch, const Logs& logs) {
  const std::optional<double> current = detail::find_value(logs, options_.monitor);
  if (!current) {
    logging::get("kestrel.callbacks")
        ->warn("EarlyStopping is conditioned on '{}', which is not in the logs. Available: {}", options_.monitor,
               detail::key_list(logs));
    return;
  }
  if (epoch < options_.start_from_epoch) return;
  if (options_.restore_best_weights && !have_best_weights_) {
    // Until something improves, the first watched epoch's weights are the best known.
    best_weights_ = model().get_weights();
    have_best_weights_ = true;
    best_epoch_ = epoch;
  }
  ++wait_;
  if (is_improvement(*current, best_)) {
    best_ = *current;
    best_epoch_ = epoch;
    if (options_.restore_best_weights) best_weights_ = model().get_weights();
    // The wait restarts only when the baseline is beaten as well as the previous best.
    if (!options_.baseline || is_improvement(*current, *options_.baseline)) wait_ = 0;
    return;
  }
  if (wait_ >= options_.patience && epoch > 0) {
    stopped_epoch_ = epoch;
    model().stop_training = true;
  }
}

void EarlyStopping::on_train_end(const Logs& logs) {
  auto log = logging::get("kestrel.callbacks");
  if (stopped_epoch_ > 0 && options_.verbose > 0) log->info("Epoch {}: early stopping", stopped_epoch_ + 1);
  if (options_.restore_best_weights && have_best_weights_) {
    if (options_.verbose > 0) {
      log->info("Restoring model weights from the end of the best epoch: {}.", best_epoch_ + 1);
    }
    model().set_weights(best_weights_);
  }
}

}  // namespace kestrel::callbacks
