#include "framework/autodiff/recording.h"

#include "framework/ops/recording.h"

namespace kestrel::autodiff {

bool is_recording() { return kestrel::detail::gradient_recording_depth() > 0; }

namespace detail {
void push_recording() {
  kestrel::detail::set_gradient_recording_depth(kestrel::detail::gradient_recording_depth() + 1);
}
void pop_recording() { kestrel::detail::set_gradient_recording_depth(kestrel::detail::gradient_recording_depth() - 1); }
}  // namespace detail

NoGradScope::NoGradScope() : saved_(kestrel::detail::gradient_recording_depth()) {
  kestrel::detail::set_gradient_recording_depth(0);
}
NoGradScope::~NoGradScope() { kestrel::detail::set_gradient_recording_depth(saved_); }

}  // namespace kestrel::autodiff
