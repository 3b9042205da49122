#include "framework/callbacks/terminate_on_nan.h"

#include <cmath>

#include "framework/logging/logging.h"
#include "framework/model/model.h"

namespace kestrel::callbacks {

void TerminateOnNaN::on_train_batch_end(std::int64_t batch, const Logs& logs) {
  auto found = logs.find("loss");
  if (found == logs.end() || std::isfinite(found->second)) return;
  logging::get("kestrel.callbacks")->warn("Batch {}: Invalid loss ({}), terminating training", batch, found->second);
  model().stop_training = true;
}

}  // namespace kestrel::callbacks
