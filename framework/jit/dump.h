// Graph dumps, as XLA's --xla_dump_to: with KESTREL_DUMP_DIR set, every compile writes its graph
// before and after the passes, as text and as a GraphProto (framework/jit/graph.proto).
//
//   KESTREL_DUMP_DIR=/tmp/dump ./my_program
//   ls /tmp/dump    # train_step.1.traced.txt  train_step.1.traced.pb  train_step.1.optimized.txt ...
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "framework/jit/graph.h"

namespace kestrel::jit {

/// The dump folder from KESTREL_DUMP_DIR, if set and not empty.
std::optional<std::string> dump_directory();

/// Writes <dir>/<function>.<compile>.<stage>.txt and .pb; throws IOError naming the file on failure.
void dump_graph(const Graph& graph, const std::string& directory, const std::string& function, std::int64_t compile,
                const std::string& stage);

}  // namespace kestrel::jit
