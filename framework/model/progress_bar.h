// ProgressBar: Keras's progress display for fit, evaluate and predict (keras.utils.Progbar as
// driven by the ProgbarLogger callback). fit, evaluate and predict add one when verbose > 0.
//
//   ProgressBar bar({.verbose = 1, .epochs = 5, .steps = 469});
//   // Epoch 1/5
//   // 187/469 [===========>..................] - ETA: 3s - loss: 0.4512 - accuracy: 0.8431
//   // 469/469 [==============================] - 5s 10ms/step - loss: 0.4012 - accuracy: 0.8531 - val_loss: 0.3907
//
// On a terminal the line is redrawn in place with "\r", at most every `interval` seconds. When
// stdout is a file or a pipe only each epoch's finished line is written. verbose 2 writes one
// short line per epoch ("469/469 - 5s - loss: 0.4012 - val_loss: 0.3907 - 5s/epoch - 10ms/step").
// "Epoch i/n" lines appear when there is more than one epoch. Values are the logs passed to the
// hooks, shown as they are (Kestrel's logs are already running means). This is the one part of
// Kestrel that writes to stdout; tests give it their own stream, terminal flag and clock.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

#include "framework/model/callback.h"

namespace kestrel {

struct ProgressBarOptions {
  /// 0 silent; 1 a live bar (one line per epoch when not on a terminal); 2 one line per epoch.
  int verbose = 1;
  /// Epochs in the fit ("Epoch 3/5").
  int epochs = 1;
  /// Steps per epoch (or per evaluate / predict run); 0 when unknown ("   187/Unknown").
  std::int64_t steps = 0;
  /// Where to write; std::cout when null.
  std::ostream* out = nullptr;
  /// Whether out is a terminal; when unset, isatty(stdout) for std::cout and false for other streams.
  std::optional<bool> terminal = std::nullopt;
  /// Seconds from any fixed origin; a steady clock when empty.
  std::function<double()> clock = nullptr;
  /// Characters between the brackets.
  int width = 30;
  /// Minimum seconds between redraws on a terminal.
  double interval = 0.05;
  /// Text appended to each finished line; fit shows what jit_compile cost with it
  /// (" - compiles: 1 (183ms)"). Nothing when empty.
  std::function<std::string()> note = nullptr;
};

class ProgressBar : public Callback {
 public:
  /// The chief of a multi-worker job alone runs it (Callback::chief_worker_only).
  bool chief_worker_only() const override { return true; }
  explicit ProgressBar(ProgressBarOptions options = {});

  /// Sets the steps per epoch or run (0: unknown), for runs that learn it late.
  void set_steps(std::int64_t steps) { options_.steps = steps; }

  void on_train_begin(const Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_train_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_test_begin(const Logs& logs) override;
  void on_test_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_test_end(const Logs& logs) override;
  void on_predict_begin(const Logs& logs) override;
  void on_predict_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_predict_end(const Logs& logs) override;

 private:
  void start();
  void update(std::int64_t current, const Logs& logs, bool finalize);
  void finish(const Logs& logs);
  double now() const;
  double step_duration(std::int64_t current, double now);
  void write(const std::string& text);

  ProgressBarOptions options_;
  bool terminal_ = false;
  bool in_fit_ = false;  // inside fit, validation runs silently
  std::int64_t target_ = 0;
  std::int64_t seen_ = 0;
  double start_time_ = 0.0;
  std::optional<double> last_draw_;
  std::optional<double> time_after_first_step_;
  std::size_t prev_width_ = 0;
};

}  // namespace kestrel
