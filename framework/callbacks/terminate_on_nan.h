// TerminateOnNaN: stops fit as soon as a batch's loss is NaN or infinite, as
// keras.callbacks.TerminateOnNaN.
//
//   model.fit(x, y, {.epochs = 10, .callbacks = {callbacks::TerminateOnNaN()}});
#pragma once

#include "framework/model/callback.h"

namespace kestrel::callbacks {

class TerminateOnNaN : public Callback {
 public:
  /// Sets model.stop_training (and logs a warning) when logs["loss"] is NaN or infinite.
  void on_train_batch_end(std::int64_t batch, const Logs& logs) override;
};

}  // namespace kestrel::callbacks
