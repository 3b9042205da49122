#include "framework/callbacks/history.h"

namespace kestrel::callbacks {

void HistoryCallback::on_train_begin(const Logs& logs) { history_ = History{}; }

void HistoryCallback::on_epoch_end(int epoch, const Logs& logs) {
  history_.epoch.push_back(epoch);
  for (const auto& [key, value] : logs) history_.history[key].push_back(value);
}

}  // namespace kestrel::callbacks
