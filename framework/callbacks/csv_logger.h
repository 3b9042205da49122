// CSVLogger: writes one row per epoch to a CSV file, as keras.callbacks.CSVLogger.
//
//   model.fit(x, y, {.epochs = 5, .validation_split = 0.1,
//                    .callbacks = {callbacks::CSVLogger("training.log")}});
//   // epoch,accuracy,loss,val_accuracy,val_loss
//   // 0,0.8431,0.4512,0.8512,0.4211
//
// The columns are "epoch" (0-based) and the first epoch's log names, sorted; a value missing in a
// later epoch is written as NA. Floats are written as Python's repr writes them and lines end in
// "\r\n", so the file is byte-for-byte what Keras writes. With append, rows are added to an
// existing file and the header is written only if the file is empty.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "framework/model/callback.h"

namespace kestrel::callbacks {

struct CSVLoggerOptions {
  char separator = ',';
  /// Add rows to an existing file (resuming training) instead of replacing it.
  bool append = false;
};

class CSVLogger : public Callback {
 public:
  /// The chief of a multi-worker job alone runs it (Callback::chief_worker_only).
  bool chief_worker_only() const override { return true; }
  explicit CSVLogger(std::string filename, CSVLoggerOptions options = {});

  /// Opens the file; throws IOError naming it when that fails.
  void on_train_begin(const Logs& logs) override;
  /// Writes the epoch's row (and, the first time, the header) and flushes.
  void on_epoch_end(int epoch, const Logs& logs) override;
  /// Closes the file.
  void on_train_end(const Logs& logs) override;

  const std::string& filename() const { return filename_; }

 private:
  struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };

  void write_line(const std::vector<std::string>& fields);

  std::string filename_;
  CSVLoggerOptions options_;
  // Shared so the callback stays copyable (fit takes callbacks by value).
  std::shared_ptr<std::FILE> file_;
  std::vector<std::string> keys_;
  bool keys_known_ = false;
  bool write_header_ = true;
};

}  // namespace kestrel::callbacks
