// BackupAndRestore: fault tolerance for fit, as keras.callbacks.BackupAndRestore. It backs up the
// run at the end of every epoch (or every N training steps) into backup_dir; a fit started with
// a backup there continues from it, and ends with the same weights, bit for bit, as a run that
// never stopped.
//
//   model.build({1, 784});
//   model.fit(train, {.epochs = 10, .callbacks = {callbacks::BackupAndRestore("/tmp/backup")}});
//   // killed in epoch 6; run the same program again: fit restores epoch 5's backup and goes on
//
// A backup holds what the rest of the run depends on: the weights and the optimizer's state (a
// Keras 3 weights file), the position (epoch, and steps done in it), the metrics' running state
// (so the epoch's logs come out the same), and the global random stream. The input pipeline is
// replayed to the position on restore (its epochs begun and batches read, the model not run),
// which recreates its shuffle state. The program must build the same model, data and fit call,
// and, as in Keras, build the model before fit (its weights must exist to be restored).
//
// A backup is written atomically: into a new directory, renamed into place, then named in the
// `checkpoint` file (itself replaced by a rename); the previous backup is removed only after.
// Each file and directory is synced to disk before the rename that puts it in force. A process
// killed while writing, or a machine that goes down, leaves the previous backup in force. Under several workers the
// chief writes and every worker restores, from a backup_dir they all can read.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "framework/callbacks/save_schedule.h"
#include "framework/core/tensor.h"
#include "framework/model/callback.h"

namespace kestrel::callbacks {

struct BackupAndRestoreOptions {
  /// "epoch", or a number of training steps between backups.
  detail::SaveFreq save_freq = "epoch";
  /// Remove the backup when training ends normally (an interrupted run keeps it).
  bool delete_checkpoint = true;
};

class BackupAndRestore : public Callback {
 public:
  /// Throws ValueError for an empty backup_dir or a bad save_freq.
  explicit BackupAndRestore(std::filesystem::path backup_dir, BackupAndRestoreOptions options = {});

  void on_train_begin(const Logs& logs) override;
  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_train_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_train_end(const Logs& logs) override;

  /// The directory of the backup in force, or nullopt when there is none.
  std::optional<std::filesystem::path> latest_backup() const;

 private:
  bool writes() const;  // the chief of a multi-worker job, or a process alone
  void back_up(int epoch, std::int64_t step);
  void restore(const std::filesystem::path& backup);

  std::filesystem::path dir_;
  BackupAndRestoreOptions options_;
  detail::SaveSchedule schedule_;
  int epoch_ = 0;
  std::int64_t backups_ = 0;  // numbers the backup directories
  // A backup taken mid-epoch holds the metrics' state; restored when that epoch begins again.
  std::optional<int> restore_metrics_in_epoch_;
  std::vector<Tensor> restored_metrics_;
};

}  // namespace kestrel::callbacks
