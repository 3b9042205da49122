#include "framework/layers/training_step.h"

#include <memory>
#include <unordered_map>

#include "framework/core/error.h"

namespace kestrel::layers {

// Not file-local: TrainingStepScope::Saved holds one, and GCC's -Wsubobject-linkage flags a
// class of the library holding a type of an anonymous namespace when a unity build compiles this
// file as one included into its batch.
struct StepState {
  Tensor step;                                          // undefined: step 0
  std::unordered_map<const void*, std::int64_t> calls;  // restarted each step, so it stays small
};

namespace {
thread_local StepState state;

Tensor checked_step(Tensor step) {
  if (!step.defined() || step.dtype() != DType::int64 || step.rank() != 0) {
    throw TypeError(
        "TrainingStepScope: the step must be an int64 scalar tensor (the optimizer's iteration count), "
        "got " +
        (step.defined() ? step.spec().to_string() : std::string("an undefined tensor")));
  }
  return step;
}
}  // namespace

struct TrainingStepScope::Saved {
  StepState state;
};

TrainingStepScope::TrainingStepScope(Tensor step) {
  Tensor checked = checked_step(std::move(step));
  saved_ = std::make_unique<Saved>(Saved{std::move(state)});
  state = StepState{std::move(checked), {}};
}

TrainingStepScope::TrainingStepScope(std::int64_t step) : TrainingStepScope(Tensor::scalar(step, DType::int64)) {}

TrainingStepScope::~TrainingStepScope() { state = std::move(saved_->state); }

Tensor training_step() { return state.step.defined() ? state.step : Tensor::scalar(0, DType::int64); }

std::int64_t next_call_index(const void* caller) { return state.calls[caller]++; }

}  // namespace kestrel::layers
