#include "framework/autodiff/recording.h"

namespace kestrel::autodiff {
namespace {
thread_local int t_recording_depth = 0;
}  // namespace

bool is_recording() { return t_recording_depth > 0; }

namespace detail {
void push_recording() { ++t_recording_depth; }
void pop_recording() { --t_recording_depth; }
}  // namespace detail

NoGradScope::NoGradScope() : saved_(t_recording_depth) { t_recording_depth = 0; }
NoGradScope::~NoGradScope() { t_recording_depth = saved_; }

}  // namespace kestrel::autodiff
