// LambdaCallback: a callback made of functions, as keras.callbacks.LambdaCallback.
//
//   callbacks::LambdaCallback print_loss({
//       .on_epoch_end = [](int epoch, const Logs& logs) { std::cout << epoch << " " << logs.at("loss") << "\n"; }});
//   model.fit(x, y, {.epochs = 3, .callbacks = {print_loss}});
//
// Hooks left empty do nothing.
#pragma once

#include <cstdint>
#include <functional>

#include "framework/model/callback.h"

namespace kestrel::callbacks {

struct LambdaCallbackOptions {
  std::function<void(int epoch, const Logs& logs)> on_epoch_begin = nullptr;
  std::function<void(int epoch, const Logs& logs)> on_epoch_end = nullptr;
  std::function<void(const Logs& logs)> on_train_begin = nullptr;
  std::function<void(const Logs& logs)> on_train_end = nullptr;
  std::function<void(std::int64_t batch, const Logs& logs)> on_train_batch_begin = nullptr;
  std::function<void(std::int64_t batch, const Logs& logs)> on_train_batch_end = nullptr;
};

class LambdaCallback : public Callback {
 public:
  explicit LambdaCallback(LambdaCallbackOptions functions) : functions_(std::move(functions)) {}

  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_train_begin(const Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  void on_train_batch_begin(std::int64_t batch, const Logs& logs) override;
  void on_train_batch_end(std::int64_t batch, const Logs& logs) override;

 private:
  LambdaCallbackOptions functions_;
};

}  // namespace kestrel::callbacks
