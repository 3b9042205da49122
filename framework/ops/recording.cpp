#include "framework/ops/recording.h"

namespace kestrel::detail {
namespace {
// Per thread: replicas on different threads trace and record independently.
thread_local OpRecorder* t_recorder = nullptr;
thread_local int t_gradient_recording_depth = 0;
}  // namespace

OpRecorder* op_recorder() { return t_recorder; }
void set_op_recorder(OpRecorder* recorder) { t_recorder = recorder; }

int gradient_recording_depth() { return t_gradient_recording_depth; }
void set_gradient_recording_depth(int depth) { t_gradient_recording_depth = depth; }

}  // namespace kestrel::detail
