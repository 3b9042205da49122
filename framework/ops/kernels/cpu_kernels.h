// Kestrel's own hot kernels, compiled once per instruction-set level and chosen at start-up from
// cpuid (internal), as PyTorch's ATen does with its CPU capability.
//
//   kernels::cpu().softmax(x, y, axis, /*log=*/false);                  // the chosen level (TensorViews)
//   kernels::cpu_kernels_at(CpuCapability::baseline).softmax(...);     // one level, for tests
//
// The kernels live in framework/ops/kernels/cpu/, whose files are compiled once per level
// (cmake/KestrelCpuKernels.cmake) inside namespace kestrel::kernels::<level>. Adding a kernel
// means one line in the list below and its definition in a file there.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "framework/core/cpu_capability.h"
#include "framework/core/shape.h"
#include "framework/core/tensor.h"
#include "framework/ops/elementwise_opcode.h"
#include "framework/ops/kernels/elementwise_operand.h"
#include "framework/ops/kernels/gemm.h"
#include "framework/ops/kernels/pool_geometry.h"

namespace kestrel::kernels {

enum class Reduction { sum, max };

// X(name, result type, (parameters)): one entry per kernel.
#define KESTREL_CPU_KERNELS(X)                                                                                         \
  /* out = opcode(in...) over float32 tensors with NumPy broadcasting: the kernel of each op with */                   \
  /* an elementwise opcode (comparisons write bool, select reads a bool mask) */                                       \
  X(elementwise_float32, void, (ElementwiseOpcode opcode, std::span<const TensorView> in, const TensorView& out))      \
  /* the same over bfloat16 tensors (comparisons write bool), in float32 a block at a time: the */                     \
  /* bits of widening, elementwise_float32 and rounding, without the copies */                                         \
  X(elementwise_bfloat16, void, (ElementwiseOpcode opcode, std::span<const TensorView> in, const TensorView& out))     \
  /* y[0..n) = opcode(args...) on one thread (comparisons write 1 or 0): one instruction of a */                       \
  /* fused elementwise program over one block */                                                                       \
  X(elementwise_step, void,                                                                                            \
    (ElementwiseOpcode opcode, const std::array<ElementwiseOperand, 3>& args, float* y, std::int64_t n))               \
  /* softmax (log = false) or log_softmax (log = true) of x over one axis into y, both float32 or both */              \
  /* bfloat16 (computed in float32) */                                                                                 \
  X(softmax, void, (const TensorView& x, const TensorView& y, int axis, bool log))                                     \
  /* per row of [rows, classes] logits: logsumexp - logit of the label (0 where ignored); labels */                    \
  /* int32 or int64, already checked */                                                                                \
  X(sparse_softmax_cross_entropy, void,                                                                                \
    (const float* logits, const TensorView& labels, float* loss, std::int64_t classes, std::int64_t ignore_index))     \
  /* its gradient: (softmax - one_hot(label)) * dloss per row, rounding as the ops one by one */                       \
  X(sparse_softmax_cross_entropy_backprop, void,                                                                       \
    (const float* logits, const TensorView& labels, const float* dloss, float* d, std::int64_t classes,                \
     std::int64_t ignore_index))                                                                                       \
  /* layer normalization over the last axis of x (float32 or bfloat16) into y (x's dtype): */                          \
  /* (x - mean) * rstd * gamma + beta, in float32, gamma and beta [d] */                                               \
  X(layer_norm, void,                                                                                                  \
    (const TensorView& x, const float* gamma, const float* beta, const TensorView& y, float epsilon))                  \
  /* its gradient dx (x's dtype) in x, given dy (float32 or bfloat16 each) */                                          \
  X(layer_norm_backprop, void,                                                                                         \
    (const TensorView& x, const float* gamma, const TensorView& dy, const TensorView& dx, float epsilon))              \
  /* partial[j] += sum over rows [first, first + rows) of x [..., d], in row order, of dy[r, j] * xhat[r, j] */        \
  /* (x and dy float32 or bfloat16 each): layer norm's gamma gradient for one group of rows, on the calling */         \
  /* thread */                                                                                                         \
  X(layer_norm_gamma_partial, void,                                                                                    \
    (const TensorView& x, const TensorView& dy, float* partial, std::int64_t first, std::int64_t rows, float epsilon)) \
  /* sum or max of float32, bfloat16, int32 or int64 `in` over sorted, distinct axes into `out` (bfloat16 */           \
  /* summed in float32 as it is read, into a float32 out or a bfloat16 one rounded once at the end) */                 \
  X(reduce, void, (const TensorView& in, const TensorView& out, std::span<const int> axes, Reduction r))               \
  /* 2-D pooling over NHWC float32 images and its gradients (framework/ops/pool.h's ops) */                            \
  X(max_pool2d, void, (const PoolGeometry& g, const float* x, float* y))                                               \
  X(max_pool2d_backprop, void, (const PoolGeometry& g, const float* x, const float* dy, float* dx))                    \
  X(max_pool2d_select, void, (const PoolGeometry& g, const float* x, const float* values, float* out))                 \
  X(avg_pool2d, void, (const PoolGeometry& g, const float* x, float* y))                                               \
  X(avg_pool2d_backprop, void, (const PoolGeometry& g, const float* dy, float* dx))                                    \
  /* gather: rows of row_bytes from params viewed as [outer, n, row], picked by checked indices */                     \
  X(gather_rows, void,                                                                                                 \
    (const void* params, std::span<const std::int64_t> indices, void* out, std::int64_t outer, std::int64_t n,         \
     std::size_t row_bytes))                                                                                           \
  /* scatter_add: zeroes out [outer, n, inner] and adds updates [outer, K, inner] into the rows */                     \
  /* indices name, in index order (float32, int32 or int64) */                                                         \
  X(scatter_add, void,                                                                                                 \
    (std::span<const std::int64_t> indices, const TensorView& updates, const TensorView& out, std::int64_t outer,      \
     std::int64_t n, std::int64_t inner))                                                                              \
  /* dropout of float32 x [n] with a random::Key (as_uint64): y[i] = x[i] * scale where the top 24 */                  \
  /* bits of uniform_at's Philox word reach threshold (ceil(rate * 2^24)), else 0 */                                   \
  X(dropout, void,                                                                                                     \
    (const float* x, float* y, std::int64_t n, std::uint64_t key, std::uint32_t threshold, float scale))               \
  /* out = in in out's dtype, element by element (same numel): to bfloat16 rounds to nearest even */                   \
  /* through float32, to bool tests != 0 */                                                                            \
  X(convert, void, (const TensorView& in, const TensorView& out))                                                      \
  /* the same between float32 and bfloat16 over one run of n elements on the calling thread, for */                    \
  /* kernels that compute bfloat16 in float32 a block at a time (gemm and convolution below AVX-512, */                \
  /* elementwise ops, cross-entropy rows, fused programs; the level's own kernels inline them) */                      \
  X(widen_bfloat16, void, (const bfloat16* in, std::int64_t n, float* out))                                            \
  X(round_to_bfloat16, void, (const float* in, std::int64_t n, bfloat16* out))                                         \
  /* Eigen's packed GEMM on the calling thread, leading dims filled in (kernels/gemm.h's */                            \
  /* gemm chooses it over oneDNN for some shapes) */                                                                   \
  X(packed_gemm, void, (const GemmArgs& args))

/// One level's kernels.
struct CpuKernels {
#define KESTREL_CPU_KERNEL_POINTER(name, result, params) result(*name) params;
  KESTREL_CPU_KERNELS(KESTREL_CPU_KERNEL_POINTER)
#undef KESTREL_CPU_KERNEL_POINTER
};

/// The kernels of cpu_capability()'s level; the first call logs which level and why.
const CpuKernels& cpu();

/// The kernels of one level. Throws ValueError for a level above detected_cpu_capability() or
/// built_cpu_capability().
const CpuKernels& cpu_kernels_at(CpuCapability level);

}  // namespace kestrel::kernels
