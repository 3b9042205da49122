// A batch as a compiled step's named arguments, and back (internal to the jit steps): "x" or
// "x.<input name>", "y", "sample_weight", "row_mask", so a compile log's signature reads as the
// batch does.
//
//   jit::Args args = detail::args_of(batch);      // what a compiled step (jit::ReplicatedFunction) is called with
//   Batch again = detail::batch_of(args);          // what the traced step sees
//
// Several steps in one call (steps_per_execution) take each step's arguments under a prefix:
// "step0/x", "step1/x", ...; one step keeps the plain names.
//
//   jit::Args all = detail::join_steps({args_of(first), args_of(second)});
//   std::vector<jit::Args> each = detail::split_steps(all);   // {first's, second's}
#pragma once

#include <vector>

#include "framework/jit/state_trace.h"
#include "framework/model/batch.h"

namespace kestrel::detail {

/// The batch's tensors by name; every defined one is an argument.
jit::Args args_of(const Batch& batch);
/// The batch the arguments stand for (other names are ignored: callers add their own).
Batch batch_of(const jit::Args& args);
/// The arguments of several steps as one call's.
jit::Args join_steps(const std::vector<jit::Args>& steps);
/// One call's arguments as its steps' (join_steps undone).
std::vector<jit::Args> split_steps(const jit::Args& args);

}  // namespace kestrel::detail
