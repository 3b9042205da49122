#include "framework/jit/passes/dead_code_elimination.h"

#include <vector>

#include "framework/jit/rewriter.h"

namespace kestrel::jit {

bool DeadCodeElimination::run(Graph& graph) {
  const auto n = static_cast<std::size_t>(graph.size());
  std::vector<bool> live(n, false);
  for (ValueId out : graph.outputs()) live[static_cast<std::size_t>(out)] = true;
  for (ValueId in : graph.inputs()) live[static_cast<std::size_t>(in)] = true;
  // Users come after what they use, so one backward sweep finds everything the outputs reach.
  std::size_t num_live = 0;
  for (std::size_t id = n; id-- > 0;) {
    if (!live[id]) continue;
    ++num_live;
    for (ValueId in : graph.nodes()[id].inputs) live[static_cast<std::size_t>(in)] = true;
  }
  if (num_live == n) return false;

  GraphRewriter rewriter(graph);
  for (ValueId id = 0; id < graph.size(); ++id) {
    if (live[static_cast<std::size_t>(id)]) rewriter.copy(id);
  }
  graph = rewriter.finish();
  return true;
}

}  // namespace kestrel::jit
