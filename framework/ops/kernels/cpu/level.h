// Included first by every file in framework/ops/kernels/cpu/: those files are compiled once per
// instruction-set level, with KESTREL_CPU_LEVEL naming the level (baseline, avx2, avx512) and
// that level's -march flags, and define their kernels in namespace kestrel::kernels::<level>.
//
// Rules for code here, since the build gives each level's copy of every inline function and
// template its own name (cmake/KestrelCpuKernels.cmake) so no wider copy can stand in for a
// baseline one:
// - no logging and no state shared through inline variables or function-local statics (each
//   level would hold its own);
// - only header-only helpers, plus out-of-line Kestrel functions (parallel_for) compiled once.
#pragma once

#ifndef KESTREL_CPU_LEVEL
#error "framework/ops/kernels/cpu/ files are compiled once per CPU level by kestrel_add_cpu_kernels"
#endif

#include "framework/ops/kernels/cpu_kernels.h"

namespace kestrel::kernels::KESTREL_CPU_LEVEL {

#define KESTREL_CPU_KERNEL_DECLARATION(name, result, params) result name params;
KESTREL_CPU_KERNELS(KESTREL_CPU_KERNEL_DECLARATION)
#undef KESTREL_CPU_KERNEL_DECLARATION

/// This level's table of kernels (framework/ops/kernels/cpu/table.cpp).
const CpuKernels& table();

}  // namespace kestrel::kernels::KESTREL_CPU_LEVEL
