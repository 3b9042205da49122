// What the op dispatcher checks on this thread besides running a kernel: whether an op recorder
// (a jit trace) takes the op instead, and whether gradient tapes record it for the backward pass.
// The layers above ops set these state (jit::TraceScope, GradientTape, autodiff::NoGradScope), so
// that ops, below them, never includes them.
//
//   class Trace final : public OpRecorder { ... };     // framework/jit/trace.h
//   detail::set_op_recorder(&trace);                    // what jit::TraceScope does
//   if (OpRecorder* r = detail::op_recorder()) ...      // what detail::apply asks
#pragma once

#include <memory>
#include <vector>

#include "framework/core/tensor.h"

namespace kestrel {

class Primitive;

/// Takes each op dispatched on its thread instead of running it: the jit's trace.
class OpRecorder {
 public:
  /// Records one op on its inputs and returns the tensor that stands for its output (`spec`).
  virtual Tensor record(std::shared_ptr<const Primitive> primitive, const std::vector<Tensor>& inputs,
                        const TensorSpec& spec) = 0;

 protected:
  ~OpRecorder() = default;
};

namespace detail {

/// The recorder active on this thread, or null (the common, eager case).
OpRecorder* op_recorder();
/// Makes `recorder` (or none, with null) the active one on this thread.
void set_op_recorder(OpRecorder* recorder);

/// How many gradient tapes record on this thread (0: none, or paused by a NoGradScope).
int gradient_recording_depth();
/// Sets it; autodiff's tapes and scopes are the only callers.
void set_gradient_recording_depth(int depth);

}  // namespace detail
}  // namespace kestrel
