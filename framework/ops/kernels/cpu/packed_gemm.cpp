// Eigen's packed GEMM, for every CPU level: the products kernels::gemm keeps off oneDNN's AVX2
// kernels (kernels/gemm.cpp says which and why). One call runs on the calling thread; gemm tiles
// larger products over the pool first.
#include "framework/ops/kernels/cpu/level.h"

#include <Eigen/Core>

#include <algorithm>
#include <cstddef>

#include "framework/ops/kernels/aligned_buffer.h"

namespace kestrel::kernels::KESTREL_CPU_LEVEL {
namespace {

namespace ei = Eigen::internal;
using Index = Eigen::Index;
using Traits = ei::gebp_traits<float, float>;

// Cache blocking, tuned on Zen 3 (32 KiB L1, 512 KiB L2 per core): a kKc x kNc block of the
// right operand is swept by the kernel's register-sized panels of the left one, which is packed
// kMc rows at a time. A deep kKc spreads the kernel's loads and stores of C over more work.
constexpr Index kKc = 512;
constexpr Index kNc = 256;
constexpr Index kMc = 1024;
// Rows of a row-major right operand packed per pass: few enough that their cache lines stay in
// L1 across the four panels that share them, even when they all map to one cache set.
constexpr Index kRowMajorPackDepth = 4;

// Mapper types of our own, so that every Eigen kernel instantiated with them belongs to this file.
template <int Order>
struct InputMapper : ei::const_blas_data_mapper<float, Index, Order> {
  InputMapper(const float* data, Index stride) : ei::const_blas_data_mapper<float, Index, Order>(data, stride) {}
};
struct OutputMapper : ei::blas_data_mapper<float, Index, Eigen::ColMajor, Eigen::Unaligned, 1> {
  OutputMapper(float* data, Index stride)
      : ei::blas_data_mapper<float, Index, Eigen::ColMajor, Eigen::Unaligned, 1>(data, stride) {}
};

// Packing buffers reused across calls by each thread (large mallocs would page-fault every call).
thread_local AlignedBuffer<float> t_block_lhs;
thread_local AlignedBuffer<float> t_block_rhs;

// One column-major product res[rows, cols] = beta * res + alpha * lhs[rows, depth] * rhs[depth, cols],
// which is the row-major C = op(A) op(B) read transposed: lhs = op(B)^T, rhs = op(A)^T.
struct ColMajorProblem {
  Index rows, cols, depth;
  const float* lhs;
  Index lhs_stride;
  const float* rhs;
  Index rhs_stride;
  float* res;
  Index res_stride;
  float alpha, beta;
};

// Applies beta to the block of res at rows [r0, r1), columns [c0, c1) before the first product
// lands in it, while the block is about to be in cache anyway.
void scale_block(const ColMajorProblem& p, Index r0, Index r1, Index c0, Index c1) {
  for (Index j = c0; j < c1; ++j) {
    float* column = p.res + j * p.res_stride;
    if (p.beta == 0.0f) {
      std::fill(column + r0, column + r1, 0.0f);
    } else if (p.beta != 1.0f) {
      for (Index i = r0; i < r1; ++i) column[i] *= p.beta;
    }
  }
}

template <int LhsOrder, int RhsOrder>
void run_problem(const ColMajorProblem& p) {
  if (p.depth == 0 || p.alpha == 0.0f) {
    scale_block(p, 0, p.rows, 0, p.cols);
    return;
  }
  using LhsMapper = InputMapper<LhsOrder>;
  using RhsMapper = InputMapper<RhsOrder>;
  ei::gemm_pack_lhs<float, Index, LhsMapper, Traits::mr, Traits::LhsProgress, typename Traits::LhsPacket4Packing,
                    LhsOrder>
      pack_lhs;
  // A row-major right operand is packed with PanelMode, a slice of depth at a time (below).
  ei::gemm_pack_rhs<float, Index, RhsMapper, Traits::nr, RhsOrder, false, RhsOrder == Eigen::RowMajor> pack_rhs;
  ei::gebp_kernel<float, float, Index, OutputMapper, Traits::mr, Traits::nr, false, false> kernel;

  const LhsMapper lhs(p.lhs, p.lhs_stride);
  const RhsMapper rhs(p.rhs, p.rhs_stride);
  const Index mc = std::min(kMc, p.rows);
  const Index kc = std::min(kKc, p.depth);
  const Index nc = std::min(kNc, p.cols);
  float* block_lhs = t_block_lhs.get(static_cast<std::size_t>(mc * kc));
  float* block_rhs = t_block_rhs.get(static_cast<std::size_t>(kc * nc));
  for (Index i2 = 0; i2 < p.rows; i2 += mc) {
    const Index rows = std::min(i2 + mc, p.rows) - i2;
    for (Index k2 = 0; k2 < p.depth; k2 += kc) {
      const Index depth = std::min(k2 + kc, p.depth) - k2;
      pack_lhs(block_lhs, LhsMapper(&lhs(i2, k2), p.lhs_stride), depth, rows);
      for (Index j2 = 0; j2 < p.cols; j2 += nc) {
        const Index cols = std::min(j2 + nc, p.cols) - j2;
        if constexpr (RhsOrder == Eigen::RowMajor) {
          // A row-major right operand (transpose_a) is packed a few rows of depth at a time:
          // walking down a whole panel of a matrix with a power-of-two row length maps every
          // row into the same cache sets, evicting each line before the next panels use it.
          for (Index kk = 0; kk < depth; kk += kRowMajorPackDepth) {
            pack_rhs(block_rhs, RhsMapper(&rhs(k2 + kk, j2), p.rhs_stride), std::min(kRowMajorPackDepth, depth - kk),
                     cols, depth, kk);
          }
        } else {
          pack_rhs(block_rhs, RhsMapper(&rhs(k2, j2), p.rhs_stride), depth, cols);
        }
        if (k2 == 0) scale_block(p, i2, i2 + rows, j2, j2 + cols);
        kernel(OutputMapper(p.res + i2 + j2 * p.res_stride, p.res_stride), block_lhs, block_rhs, rows, depth, cols,
               p.alpha);
      }
    }
  }
}

using ProblemFn = void (*)(const ColMajorProblem&);

ProblemFn select_problem_fn(bool transpose_a, bool transpose_b) {
  // lhs = op(B)^T is column-major over b's rows unless b holds B^T; likewise rhs and a.
  if (!transpose_b) {
    return transpose_a ? run_problem<Eigen::ColMajor, Eigen::RowMajor> : run_problem<Eigen::ColMajor, Eigen::ColMajor>;
  }
  return transpose_a ? run_problem<Eigen::RowMajor, Eigen::RowMajor> : run_problem<Eigen::RowMajor, Eigen::ColMajor>;
}

}  // namespace

void packed_gemm(const GemmArgs& a) {
  const ProblemFn fn = select_problem_fn(a.transpose_a, a.transpose_b);
  for (std::int64_t i = 0; i < a.batch; ++i) {
    fn({.rows = a.n,
        .cols = a.m,
        .depth = a.k,
        .lhs = a.b + i * a.stride_b,
        .lhs_stride = a.ldb,
        .rhs = a.a + i * a.stride_a,
        .rhs_stride = a.lda,
        .res = a.c + i * a.stride_c,
        .res_stride = a.ldc,
        .alpha = a.alpha,
        .beta = a.beta});
  }
}

}  // namespace kestrel::kernels::KESTREL_CPU_LEVEL
