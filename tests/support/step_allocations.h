// StepAllocations: how many buffers each training step allocates, counted between a batch's begin
// and end hooks, where only the step runs (fit reads the batch before).
//
//   StepAllocations steps;
//   model.fit(x, y, {.batch_size = 32, .epochs = 1, .verbose = 0, .callbacks = {steps.callback()}});
//   steps.per_step();   // {412, 37, 0, 0, ...}: the first step compiles
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "framework/callbacks/lambda_callback.h"
#include "framework/core/buffer.h"

namespace kestrel::testing {

class StepAllocations {
 public:
  Handle<Callback> callback() {
    return callbacks::LambdaCallback(
        {.on_train_batch_begin = [this](std::int64_t, const Logs&) { at_begin_ = allocator_stats().allocations; },
         .on_train_batch_end =
             [this](std::int64_t, const Logs&) { per_step_.push_back(allocator_stats().allocations - at_begin_); }});
  }
  const std::vector<std::int64_t>& per_step() const { return per_step_; }

 private:
  std::int64_t at_begin_ = 0;
  std::vector<std::int64_t> per_step_;
};

}  // namespace kestrel::testing
