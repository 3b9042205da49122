// The instruction-set level Kestrel's own kernels run at, read from cpuid once per process.
//
//   cpu_capability();            // CpuCapability::avx2 on a Zen 3, avx512 on a Zen 5
//   // KESTREL_CPU_CAPABILITY=baseline ./my_program    runs the portable kernels on any CPU
//
// Kestrel's hot kernels are compiled once per level (framework/ops/kernels/cpu/) and the one for
// this level is chosen at start-up, as PyTorch's ATen does with its CPU capability. The variable
// pins a level at or below the CPU's own, so every lower path can be tested on one machine; oneDNN
// is capped to the same level. A build may leave the upper levels out
// (-DKESTREL_HIGHEST_CPU_LEVEL, cmake/KestrelCpuKernels.cmake); the level is capped at its
// highest too.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kestrel {

/// Instruction-set levels, each a superset of the one before. They are the x86-64 psABI levels
/// Kestrel compiles its kernels for: baseline is plain x86-64 (SSE2), avx2 is x86-64-v3 (AVX2,
/// FMA, F16C, BMI2), avx512 is x86-64-v4 (AVX-512 F, BW, CD, DQ and VL).
enum class CpuCapability : int { baseline = 0, avx2 = 1, avx512 = 2 };

/// The highest level this CPU (and its operating system) supports.
CpuCapability detected_cpu_capability();

/// The highest level this build compiled Kestrel's kernels for: avx512 unless it was configured
/// with a lower -DKESTREL_HIGHEST_CPU_LEVEL.
CpuCapability built_cpu_capability();

/// The highest level this CPU runs and this build has kernels for: the level cpu_capability()
/// chooses when KESTREL_CPU_CAPABILITY pins none.
CpuCapability highest_runnable_cpu_capability();

/// The level Kestrel's kernels run at: the highest this CPU and this build both have, or
/// KESTREL_CPU_CAPABILITY when it names a lower one. Read once. Throws ValueError naming the
/// variable when it names no level.
CpuCapability cpu_capability();

/// True when the kernels run at the avx512 level on a CPU with AVX512_BF16 (Zen 4 and later,
/// Cooper Lake, Sapphire Rapids): its instructions round float32 to bfloat16 there. Read once.
bool cpu_has_avx512_bf16();

/// Throws ValueError, naming `caller` and the fix, unless this CPU runs `level` and this build
/// has its kernels.
void require_cpu_level(CpuCapability level, std::string_view caller);

/// Why cpu_capability() is what it is, for the log: "avx2 (the CPU's highest level)",
/// "baseline (KESTREL_CPU_CAPABILITY=baseline; the CPU has avx2)" or "avx2 (this build's highest
/// level; the CPU has avx512)".
std::string cpu_capability_reason();

/// "baseline", "avx2" or "avx512".
std::string_view to_string(CpuCapability level);

/// The level with this name, or nullopt.
std::optional<CpuCapability> parse_cpu_capability(std::string_view name);

namespace detail {

struct CpuCapabilityChoice {
  CpuCapability level;
  std::string reason;  ///< as cpu_capability_reason()
};

/// The rule cpu_capability() applies to KESTREL_CPU_CAPABILITY's value (nullopt or empty: unset):
/// the named level, capped at the detected one and at the built one. Throws ValueError when it
/// names no level.
CpuCapabilityChoice choose_cpu_capability(std::optional<std::string_view> setting, CpuCapability detected,
                                          CpuCapability built);

/// require_cpu_level's rule, for a CPU whose highest level is `detected` and a build whose highest
/// is `built`.
void require_cpu_level(CpuCapability level, CpuCapability detected, CpuCapability built, std::string_view caller);

}  // namespace detail

}  // namespace kestrel
