// SaveSchedule: when a checkpointing callback saves, from Keras's save_freq: at the end of every
// epoch ("epoch"), or after every N training batches (ModelCheckpoint, BackupAndRestore).
//
//   SaveSchedule schedule(options.save_freq, "BackupAndRestore");   // throws on a bad save_freq
//   void on_train_batch_end(std::int64_t batch, const Logs&) override {
//     if (schedule.due_after_batch(batch)) save();
//   }
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

namespace kestrel::callbacks::detail {

/// "epoch", or a number of training batches between saves.
using SaveFreq = std::variant<std::string, std::int64_t>;

class SaveSchedule {
 public:
  /// Throws ValueError, naming `callback`, unless freq is "epoch" or a number of batches > 0.
  SaveSchedule(const SaveFreq& freq, std::string_view callback);

  /// True when saves come at epoch ends, false when every N batches.
  bool every_epoch() const { return every_batches_ == 0; }
  /// After training batch `batch` (its index in the epoch, the last of an execution's under
  /// steps_per_execution): true when N batches have run since the last save. Indices restart at 0
  /// each epoch.
  bool due_after_batch(std::int64_t batch);
  /// A resumed run continues at batch `next` of an epoch: batches count from there.
  void resume_at(std::int64_t next) { last_batch_seen_ = next - 1; }

 private:
  std::int64_t every_batches_ = 0;  // 0: at epoch ends
  std::int64_t batches_since_save_ = 0;
  std::int64_t last_batch_seen_ = -1;
};

}  // namespace kestrel::callbacks::detail
