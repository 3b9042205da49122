// A batch as a compiled step's named arguments, and back (internal to the jit steps): "x" or
// "x.<input name>", "y", "sample_weight", "row_mask", so a compile log's signature reads as the
// batch does.
//
//   jit::Args args = detail::args_of(batch);      // what a compiled step (jit::ReplicatedFunction) is called with
//   Batch again = detail::batch_of(args);          // what the traced step sees
#pragma once

#include "framework/jit/state_trace.h"
#include "framework/model/batch.h"

namespace kestrel::detail {

/// The batch's tensors by name; every defined one is an argument.
jit::Args args_of(const Batch& batch);
/// The batch the arguments stand for (other names are ignored: callers add their own).
Batch batch_of(const jit::Args& args);

}  // namespace kestrel::detail
