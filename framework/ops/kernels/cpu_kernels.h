// Kestrel's own hot kernels, compiled once per instruction-set level and chosen at start-up from
// cpuid (internal), as PyTorch's ATen does with its CPU capability.
//
//   kernels::cpu().softmax(x, y, shape, axis, /*log=*/false);           // the chosen level
//   kernels::cpu_kernels_at(CpuCapability::baseline).softmax(...);     // one level, for tests
//
// The kernels live in framework/ops/kernels/cpu/, whose files are compiled once per level
// (cmake/KestrelCpuKernels.cmake) inside namespace kestrel::kernels::<level>. Adding a kernel
// means one line in the list below and its definition in a file there.
#pragma once

#include "framework/core/cpu_capability.h"
#include "framework/core/shape.h"
#include "framework/core/tensor.h"

namespace kestrel::kernels {

// X(name, result type, (parameters)): one line per kernel.
#define KESTREL_CPU_KERNELS(X)                                                                      \
  /* softmax (log = false) or log_softmax (log = true) of float32 x over one axis of shape */      \
  X(softmax, void, (const float* x, float* y, const Shape& shape, int axis, bool log))                \
  /* per row of [rows, classes] logits: logsumexp - logit of the label (0 where ignored); labels  \
     int32 or int64, already checked */                                                            \
  X(sparse_softmax_cross_entropy, void,                                                            \
    (const float* logits, const TensorView& labels, float* loss, std::int64_t classes,             \
     std::int64_t ignore_index))                                                                   \
  /* its gradient: (softmax - one_hot(label)) * dloss per row, rounding as the ops one by one */   \
  X(sparse_softmax_cross_entropy_backprop, void,                                                   \
    (const float* logits, const TensorView& labels, const float* dloss, float* d,                  \
     std::int64_t classes, std::int64_t ignore_index))

/// One level's kernels.
struct CpuKernels {
#define KESTREL_CPU_KERNEL_POINTER(name, result, params) result(*name) params;
  KESTREL_CPU_KERNELS(KESTREL_CPU_KERNEL_POINTER)
#undef KESTREL_CPU_KERNEL_POINTER
};

/// The kernels of cpu_capability()'s level; the first call logs which level and why.
const CpuKernels& cpu();

/// The kernels of one level. Throws ValueError for a level above detected_cpu_capability().
const CpuKernels& cpu_kernels_at(CpuCapability level);

}  // namespace kestrel::kernels
