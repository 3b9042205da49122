#include "framework/jit/pass.h"

#include <cstdlib>

#include "framework/core/error.h"
#include "framework/core/switch_setting.h"
#include "framework/logging/logging.h"

namespace kestrel::jit {

bool parse_jit_verify_setting(const char* setting) {
  return parse_switch_setting("KESTREL_JIT_VERIFY", setting, "verify the jit's graph after every pass");
}

bool verify_after_each_pass() {
#ifdef NDEBUG
  constexpr bool kDebugBuild = false;
#else
  constexpr bool kDebugBuild = true;
#endif
  // Parsed in every build, so that a mistyped setting is an error wherever it is given.
  static const bool on = parse_jit_verify_setting(std::getenv("KESTREL_JIT_VERIFY")) || kDebugBuild;
  return on;
}

void PassPipeline::run(Graph& graph) const {
  for (const auto& pass : passes_) {
    const std::int64_t before = graph.num_ops();
    const bool changed = pass->run(graph);
    if (verify_after_each_pass()) {
      try {
        graph.verify();
      } catch (const JitError& e) {
        throw JitError("after pass " + pass->name() + ": " + e.what());
      }
    }
    if (changed) {
      logging::get("kestrel.jit")->debug("pass {}: {} -> {} ops", pass->name(), before, graph.num_ops());
    }
  }
}

}  // namespace kestrel::jit
