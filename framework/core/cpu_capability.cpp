#include "framework/core/cpu_capability.h"

#include <cpuid.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "framework/core/error.h"

// The highest level whose kernels this build compiled, as CpuCapability's value: set by
// kestrel_add_cpu_kernels (cmake/KestrelCpuKernels.cmake) on the library holding the tables.
#ifndef KESTREL_HIGHEST_BUILT_CPU_LEVEL
#error "KESTREL_HIGHEST_BUILT_CPU_LEVEL is set by cmake/KestrelCpuKernels.cmake"
#endif

namespace kestrel {
namespace {

constexpr const char* kVariable = "KESTREL_CPU_CAPABILITY";

// Read once: a level must not change under running kernels.
const detail::CpuCapabilityChoice& choice() {
  static const detail::CpuCapabilityChoice c = [] {
    const char* setting = std::getenv(kVariable);
    return detail::choose_cpu_capability(setting ? std::optional<std::string_view>(setting) : std::nullopt,
                                         detected_cpu_capability(), built_cpu_capability());
  }();
  return c;
}

}  // namespace

CpuCapability detected_cpu_capability() {
  // libgcc's checks include the operating system's support for the wider registers (XGETBV).
  __builtin_cpu_init();
#if defined(__clang__)
  // clang's builtin knows no level names: the features that set the levels apart instead. (v3's
  // F16C, LZCNT and MOVBE cannot be asked for there; every CPU with AVX2, FMA and BMI2 has them.)
  const bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi") &&
                  __builtin_cpu_supports("bmi2");
  const bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
                  __builtin_cpu_supports("avx512vl");
#else
  const bool v3 = __builtin_cpu_supports("x86-64-v3");
  const bool v4 = __builtin_cpu_supports("x86-64-v4");
#endif
  if (v4) return CpuCapability::avx512;
  if (v3) return CpuCapability::avx2;
  return CpuCapability::baseline;
}

CpuCapability built_cpu_capability() { return static_cast<CpuCapability>(KESTREL_HIGHEST_BUILT_CPU_LEVEL); }

CpuCapability highest_runnable_cpu_capability() { return std::min(detected_cpu_capability(), built_cpu_capability()); }

CpuCapability cpu_capability() { return choice().level; }

bool cpu_has_avx512_bf16() {
  static const bool has = cpu_capability() == CpuCapability::avx512 && [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    // Leaf 7, subleaf 1: EAX bit 5 is AVX512_BF16 (the operating system's AVX-512 state support
    // is the avx512 level's own condition).
    return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) != 0 && (eax & (1u << 5)) != 0;
  }();
  return has;
}

void require_cpu_level(CpuCapability level, std::string_view caller) {
  detail::require_cpu_level(level, detected_cpu_capability(), built_cpu_capability(), caller);
}

std::string cpu_capability_reason() { return choice().reason; }

std::string_view to_string(CpuCapability level) {
  switch (level) {
    case CpuCapability::baseline: return "baseline";
    case CpuCapability::avx2: return "avx2";
    case CpuCapability::avx512: return "avx512";
  }
  return "unknown";
}

namespace detail {

CpuCapabilityChoice choose_cpu_capability(std::optional<std::string_view> setting, CpuCapability detected,
                                          CpuCapability built) {
  // Kernels the CPU cannot execute would crash, and kernels the build left out do not exist: the
  // highest level both have is the closest this process can run.
  const CpuCapability runnable = std::min(detected, built);
  const std::string cpu_has = "the CPU has " + std::string(to_string(detected));
  const std::string highest =
      std::string(to_string(runnable)) + " (" +
      (built < detected ? "this build's highest level; " + cpu_has : "the CPU's highest level") + ")";
  if (!setting || setting->empty()) return {runnable, highest};
  const std::string pinned = std::string(kVariable) + "=" + std::string(*setting);
  const std::optional<CpuCapability> wanted = parse_cpu_capability(*setting);
  if (!wanted) {
    throw ValueError(pinned +
                     " names no CPU level: use baseline, avx2 or avx512, or unset it to use the highest this CPU "
                     "and this build have (" +
                     std::string(to_string(runnable)) + ")");
  }
  if (*wanted > runnable) {
    const std::string limit = built < detected ? "this build's highest level is " + std::string(to_string(built))
                                               : "the CPU's highest level is " + std::string(to_string(detected));
    return {runnable, std::string(to_string(runnable)) + " (" + pinned + ", but " + limit + ")"};
  }
  return {*wanted, std::string(to_string(*wanted)) + " (" + pinned + "; " + cpu_has + ")"};
}

void require_cpu_level(CpuCapability level, CpuCapability detected, CpuCapability built, std::string_view caller) {
  const std::string name(to_string(level));
  if (level > detected) {
    throw ValueError(std::string(caller) + ": this CPU cannot run " + name + " kernels; its highest level is " +
                     std::string(to_string(detected)));
  }
  if (level > built) {
    throw ValueError(std::string(caller) + ": this build has no " + name + " kernels; its highest level is " +
                     std::string(to_string(built)) + " (configure with -DKESTREL_HIGHEST_CPU_LEVEL=" + name +
                     " to build them)");
  }
}

}  // namespace detail

std::optional<CpuCapability> parse_cpu_capability(std::string_view name) {
  for (CpuCapability level : {CpuCapability::baseline, CpuCapability::avx2, CpuCapability::avx512}) {
    if (name == to_string(level)) return level;
  }
  return std::nullopt;
}

}  // namespace kestrel
