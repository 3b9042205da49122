#include "framework/jit/pass.h"

#include "framework/logging/logging.h"

namespace kestrel::jit {

void PassPipeline::run(Graph& graph) const {
  for (const auto& pass : passes_) {
    const std::int64_t before = graph.num_ops();
    const bool changed = pass->run(graph);
#ifndef NDEBUG
    graph.verify();
#endif
    if (changed) {
      logging::get("kestrel.jit")->debug("pass {}: {} -> {} ops", pass->name(), before, graph.num_ops());
    }
  }
}

}  // namespace kestrel::jit
