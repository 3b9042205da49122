#include "framework/ops/kernels/cpu_kernels.h"

#include <string>

#include "framework/core/error.h"
#include "framework/logging/logging.h"

// Each level's table, defined by framework/ops/kernels/cpu/table.cpp compiled for that level.
namespace kestrel::kernels::baseline {
const CpuKernels& table();
}
namespace kestrel::kernels::avx2 {
const CpuKernels& table();
}
namespace kestrel::kernels::avx512 {
const CpuKernels& table();
}

namespace kestrel::kernels {
namespace {

const CpuKernels& table_of(CpuCapability level) {
  switch (level) {
    case CpuCapability::avx512: return avx512::table();
    case CpuCapability::avx2: return avx2::table();
    case CpuCapability::baseline: break;
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
  if (level > detected_cpu_capability()) {
    throw ValueError("cpu_kernels_at: this CPU cannot run " + std::string(to_string(level)) +
                     " kernels; its highest level is " + std::string(to_string(detected_cpu_capability())));
  }
  return table_of(level);
}

}  // namespace kestrel::kernels
