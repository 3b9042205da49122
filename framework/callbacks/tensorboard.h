// TensorBoard: writes training curves as TensorBoard event files, as keras.callbacks.TensorBoard.
//
//   model.fit(x, y, {.epochs = 10, .validation_split = 0.1,
//                    .callbacks = {callbacks::TensorBoard({.log_dir = "logs/run1"})}});
//   // $ tensorboard --logdir logs
//
// Each epoch writes "epoch_loss", "epoch_accuracy", ... and "epoch_learning_rate" under
// log_dir/train, and the validation logs (val_loss as "epoch_loss", ...) under log_dir/validation,
// with the epoch as step. With update_freq "batch" or N, "batch_loss", ... are also written at
// every Nth training batch of the whole fit, with that batch count (1-based) as step. Evaluation inside or outside fit adds
// "evaluation_loss_vs_iterations", ... under validation, with the optimizer's step count as step.
//
// EventFileWriter is the writer underneath, for scalars of your own.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>

#include "framework/io/record_writer.h"
#include "framework/model/callback.h"

namespace kestrel::callbacks {

/// Writes a TensorBoard event file ("events.out.tfevents.<unix time>.<host>") in a directory.
///
///   callbacks::EventFileWriter writer("logs/custom");
///   writer.add_scalar("reward", 1.5, /*step=*/10);
///   writer.flush();
class EventFileWriter {
 public:
  /// Creates the directory and the file, and writes the file_version event ("brain.Event:2");
  /// throws IOError naming the path when that fails.
  explicit EventFileWriter(const std::string& dir);

  /// One Event{wall_time, step, Summary{Value{tag, simple_value}}}.
  void add_scalar(const std::string& tag, double value, std::int64_t step);
  /// Pushes written events to the file, so a running TensorBoard sees them.
  void flush() { writer_.flush(); }
  void close() { writer_.close(); }
  const std::string& path() const { return writer_.path(); }

 private:
  io::RecordWriter writer_;
};

struct TensorBoardOptions {
  /// Root directory; events go to log_dir/train and log_dir/validation.
  std::string log_dir = "logs";
  /// "epoch", "batch" (every batch), or a number of batches between batch-level writes.
  std::variant<std::string, std::int64_t> update_freq = "epoch";
  /// Also write "epoch_steps_per_second".
  bool write_steps_per_second = false;
};

class TensorBoard : public Callback {
 public:
  /// The chief of a multi-worker job alone runs it (Callback::chief_worker_only).
  bool chief_worker_only() const override { return true; }
  /// Throws ValueError for a bad update_freq.
  explicit TensorBoard(TensorBoardOptions options = {});

  void on_train_begin(const Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_train_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_test_end(const Logs& logs) override;

  /// The event file for training logs (created on first use).
  EventFileWriter& train_writer();
  /// The event file for validation logs (created on first use).
  EventFileWriter& validation_writer();

 private:
  void close_writers();

  TensorBoardOptions options_;
  std::int64_t batch_every_ = 0;  // 0: epoch-level only
  std::int64_t global_train_batch_ = 0;
  std::int64_t epoch_batches_ = 0;
  double epoch_start_ = 0.0;
  // Shared so the callback stays copyable (fit takes callbacks by value).
  std::shared_ptr<EventFileWriter> train_;
  std::shared_ptr<EventFileWriter> validation_;
};

}  // namespace kestrel::callbacks
