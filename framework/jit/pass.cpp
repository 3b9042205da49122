#include "framework/jit/pass.h"

#include <cstdlib>
#include <string>
#include <string_view>

#include "framework/core/error.h"
#include "framework/logging/logging.h"

namespace kestrel::jit {

bool parse_jit_verify_setting(const char* setting) {
  const std::string_view value = setting != nullptr ? setting : "";
  if (value.empty() || value == "0") return false;
  if (value == "1") return true;
  throw ValueError("KESTREL_JIT_VERIFY='" + std::string(value) +
                   "' is not a setting: use 1 to verify the jit's graph after every pass, or 0 (the default)");
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
