#include "framework/core/cpu_capability.h"

#include <cstdlib>
#include <string>

#include "framework/core/error.h"

namespace kestrel {
namespace {

constexpr const char* kVariable = "KESTREL_CPU_CAPABILITY";

struct Choice {
  CpuCapability level;
  std::string reason;
};

Choice choose() {
  const CpuCapability detected = detected_cpu_capability();
  const char* pinned = std::getenv(kVariable);
  if (pinned == nullptr || *pinned == '\0') {
    return {detected, std::string(to_string(detected)) + " (the CPU's highest level)"};
  }
  const std::optional<CpuCapability> wanted = parse_cpu_capability(pinned);
  if (!wanted) {
    throw ValueError(std::string(kVariable) + "=" + pinned +
                     " names no CPU level: use baseline, avx2 or avx512 (or unset it to use the CPU's highest, " +
                     std::string(to_string(detected)) + ")");
  }
  const std::string setting = std::string(kVariable) + "=" + pinned;
  if (*wanted > detected) {
    // Running kernels the CPU cannot execute would crash; the CPU's own level is the closest.
    return {detected, std::string(to_string(detected)) + " (" + setting + ", but the CPU's highest level is " +
                          std::string(to_string(detected)) + ")"};
  }
  return {*wanted, std::string(to_string(*wanted)) + " (" + setting + "; the CPU has " +
                       std::string(to_string(detected)) + ")"};
}

const Choice& choice() {
  static const Choice c = choose();
  return c;
}

}  // namespace

CpuCapability detected_cpu_capability() {
  // libgcc's checks include the operating system's support for the wider registers (XGETBV).
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v4")) return CpuCapability::avx512;
  if (__builtin_cpu_supports("x86-64-v3")) return CpuCapability::avx2;
  return CpuCapability::baseline;
}

CpuCapability cpu_capability() { return choice().level; }

std::string cpu_capability_reason() { return choice().reason; }

std::string_view to_string(CpuCapability level) {
  switch (level) {
    case CpuCapability::baseline: return "baseline";
    case CpuCapability::avx2: return "avx2";
    case CpuCapability::avx512: return "avx512";
  }
  return "unknown";
}

std::optional<CpuCapability> parse_cpu_capability(std::string_view name) {
  for (CpuCapability level : {CpuCapability::baseline, CpuCapability::avx2, CpuCapability::avx512}) {
    if (name == to_string(level)) return level;
  }
  return std::nullopt;
}

}  // namespace kestrel
