// GCC's Zen tuning (what -march=native picks on AMD) folds the packed-A loads of Eigen's
// register kernel into every FMA, which leaves it load-bound at ~60% of peak; generic tuning
// keeps them in registers (~95%). It must precede every include to cover Eigen's templates.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#pragma GCC target("tune=generic")
#endif

#include "framework/ops/kernels/gemm.h"

#include <Eigen/Core>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <memory>
#include <new>

#include "framework/core/error.h"
#include "framework/core/thread_pool.h"

namespace kestrel::kernels {
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
// Below this many multiply-adds per extra thread, waking a worker costs more than it saves.
constexpr std::int64_t kMinMacsPerTask = std::int64_t{1} << 21;

// Mapper types of our own: every Eigen kernel instantiated with them is local to this file, so
// the linker cannot swap in a copy compiled elsewhere with the default tuning.
template <int Order>
struct InputMapper : ei::const_blas_data_mapper<float, Index, Order> {
  InputMapper(const float* data, Index stride) : ei::const_blas_data_mapper<float, Index, Order>(data, stride) {}
};
struct OutputMapper : ei::blas_data_mapper<float, Index, Eigen::ColMajor, Eigen::Unaligned, 1> {
  OutputMapper(float* data, Index stride)
      : ei::blas_data_mapper<float, Index, Eigen::ColMajor, Eigen::Unaligned, 1>(data, stride) {}
};

// Packing buffers reused across calls by each thread (large mallocs would page-fault every call).
class Workspace {
 public:
  float* get(std::size_t count) {
    if (count > size_) {
      data_.reset(static_cast<float*>(::operator new[](count * sizeof(float), std::align_val_t{64})));
      size_ = count;
    }
    return data_.get();
  }

 private:
  struct AlignedDelete {
    void operator()(float* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };
  std::unique_ptr<float, AlignedDelete> data_;
  std::size_t size_ = 0;
};
thread_local Workspace t_block_lhs;
thread_local Workspace t_block_rhs;

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

// The tile [r0, r1) x [c0, c1) of one problem, on the calling thread.
template <int LhsOrder, int RhsOrder>
void run_tile(const ColMajorProblem& p, Index r0, Index r1, Index c0, Index c1) {
  if (p.depth == 0 || p.alpha == 0.0f) {
    scale_block(p, r0, r1, c0, c1);
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
  const Index mc = std::min(kMc, r1 - r0);
  const Index kc = std::min(kKc, p.depth);
  const Index nc = std::min(kNc, c1 - c0);
  float* block_lhs = t_block_lhs.get(static_cast<std::size_t>(mc * kc));
  float* block_rhs = t_block_rhs.get(static_cast<std::size_t>(kc * nc));
  for (Index i2 = r0; i2 < r1; i2 += mc) {
    const Index rows = std::min(i2 + mc, r1) - i2;
    for (Index k2 = 0; k2 < p.depth; k2 += kc) {
      const Index depth = std::min(k2 + kc, p.depth) - k2;
      pack_lhs(block_lhs, LhsMapper(&lhs(i2, k2), p.lhs_stride), depth, rows);
      for (Index j2 = c0; j2 < c1; j2 += nc) {
        const Index cols = std::min(j2 + nc, c1) - j2;
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

using TileFn = void (*)(const ColMajorProblem&, Index, Index, Index, Index);

TileFn select_tile_fn(bool transpose_a, bool transpose_b) {
  // lhs = op(B)^T is column-major over b's rows unless b holds B^T; likewise rhs and a.
  if (!transpose_b) {
    return transpose_a ? run_tile<Eigen::ColMajor, Eigen::RowMajor> : run_tile<Eigen::ColMajor, Eigen::ColMajor>;
  }
  return transpose_a ? run_tile<Eigen::RowMajor, Eigen::RowMajor> : run_tile<Eigen::RowMajor, Eigen::ColMajor>;
}

struct Plan {
  GemmArgs args;
  TileFn tile_fn;
};

Plan make_plan(const GemmArgs& in) {
  Plan plan{in, select_tile_fn(in.transpose_a, in.transpose_b)};
  GemmArgs& a = plan.args;
  if (a.lda == 0) a.lda = a.transpose_a ? a.m : a.k;
  if (a.ldb == 0) a.ldb = a.transpose_b ? a.k : a.n;
  if (a.ldc == 0) a.ldc = a.n;
  KESTREL_DCHECK(a.lda >= (a.transpose_a ? a.m : a.k) && a.ldb >= (a.transpose_b ? a.k : a.n) && a.ldc >= a.n);
  return plan;
}

ColMajorProblem problem_at(const GemmArgs& a, std::int64_t index) {
  return {.rows = a.n,
          .cols = a.m,
          .depth = a.k,
          .lhs = a.b + index * a.stride_b,
          .lhs_stride = a.ldb,
          .rhs = a.a + index * a.stride_a,
          .rhs_stride = a.lda,
          .res = a.c + index * a.stride_c,
          .res_stride = a.ldc,
          .alpha = a.alpha,
          .beta = a.beta};
}

// Splits [0, extent) into `parts` ranges whose bounds are multiples of `align` (the kernel's
// register block), so no tile ends in a partial panel it did not need.
void split_range(Index extent, Index parts, Index part, Index align, Index& begin, Index& end) {
  const Index units = (extent + align - 1) / align;
  begin = std::min(extent, units * part / parts * align);
  end = std::min(extent, units * (part + 1) / parts * align);
}

}  // namespace

void gemm_serial(const GemmArgs& args) {
  if (args.m <= 0 || args.n <= 0 || args.batch <= 0) return;
  const Plan plan = make_plan(args);
  for (std::int64_t i = 0; i < plan.args.batch; ++i) {
    const ColMajorProblem p = problem_at(plan.args, i);
    plan.tile_fn(p, 0, p.rows, 0, p.cols);
  }
}

void gemm(const GemmArgs& args) {
  if (args.m <= 0 || args.n <= 0 || args.batch <= 0) return;
  const std::int64_t macs = args.batch * args.m * args.n * std::max<std::int64_t>(args.k, 1);
  const std::int64_t threads = std::min<std::int64_t>(num_threads(), macs / kMinMacsPerTask);
  if (threads <= 1) {
    gemm_serial(args);
    return;
  }
  const Plan plan = make_plan(args);
  // Whole matrices per task when the batch divides evenly; otherwise every matrix is cut into
  // `threads` tiles along its longer side (the shorter operand is packed once per tile).
  const std::int64_t splits = args.batch % threads == 0 ? 1 : threads;
  const std::int64_t tasks = args.batch * splits;
  const bool split_cols = args.m >= args.n;
  std::atomic<std::int64_t> next{0};
  // Tasks are claimed one at a time, so a thread slowed by other load does less of the work.
  parallel_for(threads, 1, [&](std::int64_t, std::int64_t) {
    for (std::int64_t task = next.fetch_add(1); task < tasks; task = next.fetch_add(1)) {
      const ColMajorProblem p = problem_at(plan.args, task / splits);
      const Index part = task % splits;
      Index r0 = 0, r1 = p.rows, c0 = 0, c1 = p.cols;
      if (split_cols) {
        split_range(p.cols, splits, part, Traits::nr, c0, c1);
      } else {
        split_range(p.rows, splits, part, Traits::mr, r0, r1);
      }
      if (r0 < r1 && c0 < c1) plan.tile_fn(p, r0, r1, c0, c1);
    }
  });
}

}  // namespace kestrel::kernels
