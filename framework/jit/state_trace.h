// trace_with_state: traces a function whose state is variables, as ReplicatedFunction traces a
// step. While it traces, each variable holds a symbolic graph input; what the function assigns to
// a variable becomes a graph output aliased to that input. The variables get their real values
// back afterwards, also when tracing throws.
//
// A variable the function assigns but was not given (the slots of a second optimizer an override
// steps) is lifted into the state, as tf.function captures the variables it touches: the function
// is traced again with it, so the program reads and updates it like the rest.
//
//   StateTrace traced = trace_with_state(weights, {{"x", x}}, [&](const Args& a) { ... });
//   traced.updated;   // the state indices assigned, in the order of the graph's first outputs
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "framework/core/variable.h"
#include "framework/jit/graph.h"

namespace kestrel::jit {

/// A compiled function's arguments, by name: the names, specs and order (by name) make its signature.
using Args = std::map<std::string, Tensor>;
using StateFn = std::function<std::vector<Tensor>(const Args& args)>;

struct StateTrace {
  Graph graph;
  /// The graph's state inputs: the state given, then the variables lifted into it.
  std::vector<Variable> state;
  /// The state variables the function assigned, in the order of the graph's first outputs; the
  /// function's own outputs follow them.
  std::vector<std::size_t> updated;
};

/// Traces fn on symbolic arguments shaped like `args`, with `state` (and any variable fn assigns
/// besides) bound to graph inputs (the graph's inputs: the state in order, then the arguments in
/// name order).
StateTrace trace_with_state(std::vector<Variable> state, const Args& args, const StateFn& fn);

/// The signature of a call: "name: spec, ..." in name order, then `key` if not empty. Throws
/// ValueError naming `function` and an undefined argument.
std::string signature_of_args(const std::string& function, const Args& args, const std::string& key);

}  // namespace kestrel::jit
