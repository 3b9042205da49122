// The CPU levels of Kestrel's kernels this machine can run and this build has, for tests that
// check every one.
//
//   for (const CpuCapability level : testing::runnable_cpu_levels()) cpu_kernels_at(level)...
#pragma once

#include <vector>

#include "framework/core/cpu_capability.h"

namespace kestrel::testing {

/// baseline, then avx2 and avx512 where the CPU and the build have them.
inline std::vector<CpuCapability> runnable_cpu_levels() {
  std::vector<CpuCapability> levels;
  for (const CpuCapability level : {CpuCapability::baseline, CpuCapability::avx2, CpuCapability::avx512}) {
    if (level <= highest_runnable_cpu_capability()) levels.push_back(level);
  }
  return levels;
}

}  // namespace kestrel::testing
