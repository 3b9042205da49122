// This level's kernels, gathered for kernels::cpu() to choose from.
#include "framework/ops/kernels/cpu/level.h"

namespace kestrel::kernels::KESTREL_CPU_LEVEL {

const CpuKernels& table() {
#define KESTREL_CPU_KERNEL_ENTRY(name, result, params) &name,
  static constexpr CpuKernels kTable{KESTREL_CPU_KERNELS(KESTREL_CPU_KERNEL_ENTRY)};
#undef KESTREL_CPU_KERNEL_ENTRY
  return kTable;
}

}  // namespace kestrel::kernels::KESTREL_CPU_LEVEL
