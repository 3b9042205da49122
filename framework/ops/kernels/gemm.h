// Matrix multiply for Kestrel's kernels (matmul, conv2d through im2col): float32, and bfloat16
// operands with float32 accumulation and a bfloat16 or float32 C.
//
//   // C[M,N] = A[M,K] * B[K,N], all row-major and dense:
//   kernels::gemm({.m = m, .n = n, .k = k, .a = a, .b = b, .c = c});
//   // C += A^T * B over 8 matrices laid out one after another:
//   kernels::gemm({.m = m, .n = n, .k = k, .a = a, .transpose_a = true, .b = b, .c = c, .beta = 1,
//                  .batch = 8, .stride_a = k * m, .stride_b = k * n, .stride_c = m * n});
//   // C = A * B + bias, the bias [N] added to every row as C is stored (a Dense layer's epilogue),
//   // and an activation after it (an inference program's Dense + GELU):
//   kernels::gemm({.m = m, .n = n, .k = k, .a = a, .b = b, .c = c, .bias = bias});
//   kernels::gemm({..., .bias = bias, .activation = kernels::GemmActivation::gelu_erf});
//   // C = A * B + bias + R, R [M,N] a residual read as C is stored (a transformer's x + Dense(h)):
//   kernels::gemm({..., .bias = bias, .residual = r});
//   // Attention scores Q K^T over [B, H] pairs of heads, Q and K read in place from [B, T, H, D]:
//   kernels::gemm({.m = t, .n = t, .k = d, .a = q, .lda = h * d, .b = k, .ldb = h * d, .transpose_b = true,
//                  .c = scores, .batch = h, .stride_a = d, .stride_b = d, .stride_c = t * t,
//                  .batch_outer = b, .outer_stride_a = t * h * d, .outer_stride_b = t * h * d,
//                  .outer_stride_c = h * t * t});
//   // bfloat16 A and B, C rounded to bfloat16 once (GemmBf16Args) or kept in float32 (GemmBf16Float32Args):
//   kernels::gemm(kernels::GemmBf16Args{.m = m, .n = n, .k = k, .a = a16, .b = b16, .c = c16});
//
// oneDNN's matmul does the arithmetic, one primitive per shape and layout, built once and cached
// (kernels/onednn.h, kernels/primitive_cache.h); below AVX-512, long thin products (k >= 256 and a
// short side of C, as weight gradients are) run on Eigen's packed kernel instead, which is twice
// as fast there (gemm.cpp). With AVX-512, a deep product of a transposed A whose C is at least 4x
// taller than wide (a weight gradient with many more inputs than outputs) runs as its transpose
// into the calling thread's grow-only scratch, then is transposed into C, and a product of a plain
// A and B of depth 4096 or more with a float32 C runs in depth slices of 1024, each added into C.
// Each call runs on one thread: gemm splits the product into tiles over kestrel::parallel_for, and
// problems too small to gain from a second thread run on the caller's thread. Results are bitwise
// reproducible for one CPU, ISA level and kestrel::num_threads(), whichever threads run the tiles.
//
// bfloat16: with AVX-512 oneDNN multiplies bfloat16 itself (natively with AVX512_BF16, emulated
// without). oneDNN 2.6 has no bfloat16 matmul below AVX-512 but a slow reference one, so there
// the product goes block by block through the float32 kernel (gemm_widened.h): each thread widens
// one block of A and B at a time, never a whole operand.
#pragma once

#include <cstdint>

#include "framework/core/dtype.h"

namespace kestrel::kernels {

/// What the GEMM applies to each element of C as it stores it, after the bias: the activations of
/// ops::relu and ops::gelu (exact, and with {.approximate = true}).
enum class GemmActivation : std::uint8_t { none, relu, gelu_erf, gelu_tanh };

/// C = alpha * op(A) * op(B) + beta * C for `batch_outer * batch` independent problems. op(A) is [m,k] and
/// op(B) is [k,n]; every matrix is row-major with the given leading dimension (0: dense). A and B
/// hold T, C holds Out; the products sum in float32.
template <class T, class Out = T>
struct GemmArgsOf {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  const T* a = nullptr;
  std::int64_t lda = 0;      ///< 0: the dense row length, k (or m when transpose_a)
  bool transpose_a = false;  ///< a holds A^T: a [k,m] row-major
  const T* b = nullptr;
  std::int64_t ldb = 0;      ///< 0: n (or k when transpose_b)
  bool transpose_b = false;  ///< b holds B^T: b [n,k] row-major
  Out* c = nullptr;
  std::int64_t ldc = 0;  ///< 0: n
  float alpha = 1.0f;
  float beta = 0.0f;  ///< 0: C is only written, so it may start uninitialized
  std::int64_t batch = 1;
  std::int64_t stride_a = 0;  ///< elements between consecutive A matrices (0: A is shared)
  std::int64_t stride_b = 0;  ///< elements between consecutive B matrices (0: B is shared)
  std::int64_t stride_c = 0;  ///< elements between consecutive C matrices
  /// An outer batch: `batch_outer` groups of `batch` matrices, each group `outer_stride_*` elements
  /// after the one before (attention's [B, H] matrices when a [B, T, H, D] operand is read in
  /// place: heads `D` apart, batch rows `T*H*D` apart, leading dimension `H*D`).
  std::int64_t batch_outer = 1;
  std::int64_t outer_stride_a = 0;
  std::int64_t outer_stride_b = 0;
  std::int64_t outer_stride_c = 0;
  /// [n], added to every row of every C matrix after the product (null: none); with beta = 0.
  const Out* bias = nullptr;
  /// m x n per C matrix, laid out as C (ldc and C's strides), added after the bias: a residual
  /// connection's x + f(x), read as C is stored (null: none). With alpha = 1 and beta = 0; it must
  /// not overlap C.
  const Out* residual = nullptr;
  /// Applied to every element after the bias and the residual; with alpha = 1 and beta = 0.
  GemmActivation activation = GemmActivation::none;
};

using GemmArgs = GemmArgsOf<float>;
/// bfloat16 in and out: C is rounded once, after the whole sum (and beta * C) is in float32.
using GemmBf16Args = GemmArgsOf<bfloat16>;
/// bfloat16 in, float32 C: for callers that add several products up before rounding.
using GemmBf16Float32Args = GemmArgsOf<bfloat16, float>;

/// Runs the batched product, splitting it over the thread pool when it is large enough.
void gemm(const GemmArgs& args);
void gemm(const GemmBf16Args& args);
void gemm(const GemmBf16Float32Args& args);

/// The same product on the calling thread only (for callers that already split their work).
void gemm_serial(const GemmArgs& args);
void gemm_serial(const GemmBf16Args& args);
void gemm_serial(const GemmBf16Float32Args& args);

}  // namespace kestrel::kernels
