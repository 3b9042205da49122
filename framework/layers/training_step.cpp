#include "framework/layers/training_step.h"

#include <unordered_map>

namespace kestrel::layers {
namespace {
struct StepState {
  std::int64_t step = 0;
  std::unordered_map<const void*, std::int64_t> calls;  // cleared each step, so it stays small
};
thread_local StepState state;
}  // namespace

void set_training_step(std::int64_t step) {
  state.step = step;
  state.calls.clear();
}

std::int64_t training_step() { return state.step; }

std::int64_t next_call_index(const void* caller) { return state.calls[caller]++; }

}  // namespace kestrel::layers
