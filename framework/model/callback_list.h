// Calls every callback's hook in order (internal to the training loop).
#pragma once

#include <vector>

#include "framework/model/callback.h"

namespace kestrel::detail {

class CallbackList {
 public:
  CallbackList(const std::vector<Handle<Callback>>& callbacks, Model* model);

  void on_train_begin(const Logs& logs);
  void on_train_end(const Logs& logs);
  void on_epoch_begin(int epoch, const Logs& logs);
  void on_epoch_end(int epoch, const Logs& logs);
  void on_train_batch_begin(std::int64_t batch, const Logs& logs);
  void on_train_batch_end(std::int64_t batch, const Logs& logs);
  void on_test_begin(const Logs& logs);
  void on_test_end(const Logs& logs);
  void on_test_batch_begin(std::int64_t batch, const Logs& logs);
  void on_test_batch_end(std::int64_t batch, const Logs& logs);
  void on_predict_begin(const Logs& logs);
  void on_predict_end(const Logs& logs);
  void on_predict_batch_begin(std::int64_t batch, const Logs& logs);
  void on_predict_batch_end(std::int64_t batch, const Logs& logs);

 private:
  std::vector<Handle<Callback>> callbacks_;  // shared: the list may hold callbacks made for this run only
};

}  // namespace kestrel::detail
