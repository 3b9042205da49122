#include "framework/callbacks/lambda_callback.h"

namespace kestrel::callbacks {

void LambdaCallback::on_epoch_begin(int epoch, const Logs& logs) {
  if (functions_.on_epoch_begin) functions_.on_epoch_begin(epoch, logs);
}

void LambdaCallback::on_epoch_end(int epoch, const Logs& logs) {
  if (functions_.on_epoch_end) functions_.on_epoch_end(epoch, logs);
}

void LambdaCallback::on_train_begin(const Logs& logs) {
  if (functions_.on_train_begin) functions_.on_train_begin(logs);
}

void LambdaCallback::on_train_end(const Logs& logs) {
  if (functions_.on_train_end) functions_.on_train_end(logs);
}

void LambdaCallback::on_train_batch_begin(std::int64_t batch, const Logs& logs) {
  if (functions_.on_train_batch_begin) functions_.on_train_batch_begin(batch, logs);
}

void LambdaCallback::on_train_batch_end(std::int64_t batch, const Logs& logs) {
  if (functions_.on_train_batch_end) functions_.on_train_batch_end(batch, logs);
}

}  // namespace kestrel::callbacks
