// Callback: hooks into fit / evaluate / predict, as keras.callbacks.Callback.
//
//   class PrintLoss : public Callback {
//     void on_epoch_end(int epoch, const Logs& logs) override { std::cout << logs.at("loss"); }
//   };
//   model.fit(x, y, {.epochs = 3, .callbacks = {PrintLoss()}});
//
// Logs map metric names to values ("loss", "accuracy", "val_loss", "learning_rate", ...).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "framework/core/handle.h"

namespace kestrel {

class Model;
using Logs = std::map<std::string, double>;

class Callback {
 public:
  virtual ~Callback() = default;

  /// fit/evaluate/predict call this before any hook.
  void set_model(Model* model) { model_ = model; }
  /// The model being trained; throws ValueError outside fit/evaluate/predict.
  Model& model() const;
  /// True for a callback that only the chief of a multi-worker job runs (Keras's
  /// _chief_worker_only): those that write files or print progress, so that the other workers
  /// stay quiet and no two write one file. Every worker runs the others, and they decide alike,
  /// since they see the same logs.
  virtual bool chief_worker_only() const { return false; }

  virtual void on_train_begin(const Logs& logs) {}
  virtual void on_train_end(const Logs& logs) {}
  virtual void on_epoch_begin(int epoch, const Logs& logs) {}
  virtual void on_epoch_end(int epoch, const Logs& logs) {}
  virtual void on_train_batch_begin(std::int64_t batch, const Logs& logs) {}
  virtual void on_train_batch_end(std::int64_t batch, const Logs& logs) {}
  virtual void on_test_begin(const Logs& logs) {}
  virtual void on_test_end(const Logs& logs) {}
  virtual void on_test_batch_begin(std::int64_t batch, const Logs& logs) {}
  virtual void on_test_batch_end(std::int64_t batch, const Logs& logs) {}
  virtual void on_predict_begin(const Logs& logs) {}
  virtual void on_predict_end(const Logs& logs) {}
  virtual void on_predict_batch_begin(std::int64_t batch, const Logs& logs) {}
  virtual void on_predict_batch_end(std::int64_t batch, const Logs& logs) {}

 private:
  Model* model_ = nullptr;
};

}  // namespace kestrel
