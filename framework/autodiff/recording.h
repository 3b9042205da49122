// Whether ops on this thread are being recorded for the backward pass.
//
// A GradientTape turns recording on for its lifetime; GradientTape::gradient() pauses its own
// tape while it runs, so an outer tape can still record the gradient computation (second order).
// The state is per thread, so replicas on different threads record independently; it lives with
// the op dispatcher that reads it (framework/ops/recording.h).
#pragma once

namespace kestrel::autodiff {

/// True while at least one GradientTape on this thread records.
bool is_recording();

namespace detail {
void push_recording();
void pop_recording();
}  // namespace detail

/// Stops recording on this thread for its lifetime (like tf.stop_recording / torch.no_grad).
class NoGradScope {
 public:
  NoGradScope();
  ~NoGradScope();
  NoGradScope(const NoGradScope&) = delete;
  NoGradScope& operator=(const NoGradScope&) = delete;

 private:
  int saved_;
};

}  // namespace kestrel::autodiff
