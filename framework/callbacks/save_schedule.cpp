#include "framework/callbacks/save_schedule.h"

#include "framework/core/error.h"

namespace kestrel::callbacks::detail {

SaveSchedule::SaveSchedule(const SaveFreq& freq, std::string_view callback) {
  if (const auto* n = std::get_if<std::int64_t>(&freq)) {
    if (*n <= 0) {
      throw ValueError(std::string(callback) + ": save_freq must be \"epoch\" or a number of batches > 0, got " +
                       std::to_string(*n));
    }
    every_batches_ = *n;
    return;
  }
  const std::string& s = std::get<std::string>(freq);
  if (s != "epoch") {
    throw ValueError(std::string(callback) + ": save_freq must be \"epoch\" or a number of batches, got '" + s + "'");
  }
}

bool SaveSchedule::due_after_batch(std::int64_t batch) {
  if (every_epoch()) return false;
  // A batch index that does not grow means a new epoch began (indices restart at 0).
  batches_since_save_ += batch > last_batch_seen_ ? batch - last_batch_seen_ : batch + 1;
  last_batch_seen_ = batch;
  if (batches_since_save_ < every_batches_) return false;
  batches_since_save_ = 0;
  return true;
}

}  // namespace kestrel::callbacks::detail
