// HistoryCallback: records each epoch's logs into a History, as keras.callbacks.History
// (fit adds one and returns its record).
//
//   auto recorder = std::make_shared<callbacks::HistoryCallback>();
//   model.fit(x, y, {.epochs = 3, .callbacks = {recorder}});
//   recorder->history().history.at("loss");     // one value per epoch
#pragma once

#include "framework/model/callback.h"
#include "framework/model/fit_options.h"

namespace kestrel::callbacks {

class HistoryCallback : public Callback {
 public:
  /// Starts a fresh record.
  void on_train_begin(const Logs& logs) override;
  /// Appends the epoch and each of its logs.
  void on_epoch_end(int epoch, const Logs& logs) override;

  const History& history() const { return history_; }

 private:
  History history_;
};

}  // namespace kestrel::callbacks
