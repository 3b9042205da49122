#include "framework/ops/kernels/cpu_kernels.h"

#include "framework/logging/logging.h"

// Each level's table, defined by framework/ops/kernels/cpu/table.cpp compiled for that level. A
// build has the levels up to KESTREL_HIGHEST_BUILT_CPU_LEVEL (CpuCapability's value, set by
// cmake/KestrelCpuKernels.cmake), and cpu_capability() never names a level above it.
namespace kestrel::kernels::baseline {
const CpuKernels& table();
}
#if KESTREL_HIGHEST_BUILT_CPU_LEVEL >= 1
namespace kestrel::kernels::avx2 {
const CpuKernels& table();
}
#endif
#if KESTREL_HIGHEST_BUILT_CPU_LEVEL >= 2
namespace kestrel::kernels::avx512 {
const CpuKernels& table();
}
#endif

namespace kestrel::kernels {
namespace {

const CpuKernels& table_of(CpuCapability level) {
  switch (level) {
#if KESTREL_HIGHEST_BUILT_CPU_LEVEL >= 2
    case CpuCapability::avx512: return avx512::table();
#endif
#if KESTREL_HIGHEST_BUILT_CPU_LEVEL >= 1
    case CpuCapability::avx2: return avx2::table();
#endif
    default: break;
  }
  return baseline::table();
}

const CpuKernels& chosen() {
  const CpuCapability level = cpu_capability();
  logging::get("kestrel.kernels")->info("CPU kernels: {}", cpu_capability_reason());
  return table_of(level);
}

}  // namespace

const CpuKernels& cpu() {
  static const CpuKernels& kernels = chosen();
  return kernels;
}

const CpuKernels& cpu_kernels_at(CpuCapability level) {
  require_cpu_level(level, "cpu_kernels_at");
  return table_of(level);
}

}  // namespace kestrel::kernels
