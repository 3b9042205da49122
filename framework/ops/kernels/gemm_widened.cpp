#include "framework/ops/kernels/gemm_widened.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "framework/core/thread_pool.h"
#include "framework/ops/kernels/cpu_kernels.h"

namespace kestrel::kernels {
namespace {

// A tile of C and the blocks of A and B that go into it, widened: 3 x 256 KiB, which stays in
// L2 beside the float32 kernel's own packing, and deep enough (k = 256) that widening costs one
// conversion per 128 multiply-adds of a square product.
constexpr std::int64_t kTileRows = 256;
constexpr std::int64_t kTileCols = 256;
constexpr std::int64_t kDepth = 256;
// Tiles split finer than this many rows or columns only to give each thread a tile.
constexpr std::int64_t kTileAlign = 16;
// Below this many multiply-adds per extra thread, waking a worker costs more than it saves.
constexpr std::int64_t kMinMacsPerTask = std::int64_t{1} << 21;

std::int64_t ceil_div(std::int64_t x, std::int64_t y) { return (x + y - 1) / y; }

struct Tiling {
  std::int64_t rows, cols;        // of one tile of C (the last ones in a row or column may be shorter)
  std::int64_t tiles_m, tiles_n;  // per matrix
  std::int64_t depth;             // of one block of k
};

// Tiles of at most kTileRows x kTileCols; when that gives fewer tiles than threads, the longer
// side of C is cut finer so that every thread gets one.
template <class Out>
Tiling tiling_for(const GemmArgsOf<bfloat16, Out>& g, std::int64_t threads) {
  Tiling t{.rows = std::min(g.m, kTileRows),
           .cols = std::min(g.n, kTileCols),
           .tiles_m = 0,
           .tiles_n = 0,
           .depth = std::min(g.k, kDepth)};
  const std::int64_t per_matrix = ceil_div(threads, g.batch);
  if (ceil_div(g.m, t.rows) * ceil_div(g.n, t.cols) < per_matrix) {
    if (g.m >= g.n) {
      const std::int64_t parts = ceil_div(per_matrix, ceil_div(g.n, t.cols));
      t.rows = std::min(g.m, ceil_div(ceil_div(g.m, parts), kTileAlign) * kTileAlign);
    } else {
      const std::int64_t parts = ceil_div(per_matrix, ceil_div(g.m, t.rows));
      t.cols = std::min(g.n, ceil_div(ceil_div(g.n, parts), kTileAlign) * kTileAlign);
    }
  }
  t.tiles_m = ceil_div(g.m, t.rows);
  t.tiles_n = ceil_div(g.n, t.cols);
  return t;
}

// Each thread's widened blocks and float32 tile, grown to the largest tiling it has run.
struct Workspace {
  std::vector<float> a, b, c;
};

Workspace& workspace(const Tiling& t) {
  thread_local Workspace w;
  const auto grow = [](std::vector<float>& v, std::int64_t size) {
    if (v.size() < static_cast<std::size_t>(size)) v.resize(static_cast<std::size_t>(size));
  };
  grow(w.a, t.rows * t.depth);
  grow(w.b, t.depth * t.cols);
  grow(w.c, t.rows * t.cols);
  return w;
}

// dst [rows, cols] dense = src [rows, cols] with leading dimension ld, widened.
void widen(const bfloat16* src, std::int64_t ld, std::int64_t rows, std::int64_t cols, float* dst) {
  for (std::int64_t r = 0; r < rows; ++r) cpu().widen_bfloat16(src + r * ld, cols, dst + r * cols);
}

// C tile [i0, i0 + rows) x [j0, j0 + cols) of matrix `p`: the sum over blocks of k, each widened
// and multiplied by the float32 kernel, the first one with the caller's beta.
template <class Out>
void tile_product(const GemmArgsOf<bfloat16, Out>& g, std::int64_t p, std::int64_t i0, std::int64_t rows,
                  std::int64_t j0, std::int64_t cols, Workspace& w) {
  const bfloat16* a = g.a + p * g.stride_a;
  const bfloat16* b = g.b + p * g.stride_b;
  Out* c = g.c + p * g.stride_c + i0 * g.ldc + j0;
  GemmArgs block{.m = rows,
                 .n = cols,
                 .a = w.a.data(),
                 .transpose_a = g.transpose_a,
                 .b = w.b.data(),
                 .transpose_b = g.transpose_b,
                 .alpha = g.alpha};
  if constexpr (std::is_same_v<Out, float>) {
    block.c = c;
    block.ldc = g.ldc;
  } else {
    block.c = w.c.data();
    block.ldc = cols;
    if (g.beta != 0.0f) widen(c, g.ldc, rows, cols, block.c);
  }
  std::int64_t q0 = 0;
  do {
    block.k = std::min(kDepth, g.k - q0);
    if (g.transpose_a) {
      widen(a + q0 * g.lda + i0, g.lda, block.k, rows, w.a.data());
      block.lda = rows;
    } else {
      widen(a + i0 * g.lda + q0, g.lda, rows, block.k, w.a.data());
      block.lda = block.k;
    }
    if (g.transpose_b) {
      widen(b + j0 * g.ldb + q0, g.ldb, cols, block.k, w.b.data());
      block.ldb = block.k;
    } else {
      widen(b + q0 * g.ldb + j0, g.ldb, block.k, cols, w.b.data());
      block.ldb = cols;
    }
    block.beta = q0 == 0 ? g.beta : 1.0f;
    gemm_serial(block);
    q0 += block.k;
  } while (q0 < g.k);
  if constexpr (!std::is_same_v<Out, float>) {
    for (std::int64_t r = 0; r < rows; ++r) cpu().round_to_bfloat16(block.c + r * cols, cols, c + r * g.ldc);
  }
}

template <class Out>
std::int64_t threads_for(const GemmArgsOf<bfloat16, Out>& g) {
  const std::int64_t macs = g.batch * g.m * g.n * std::max<std::int64_t>(g.k, 1);
  return std::max<std::int64_t>(1, std::min<std::int64_t>(num_threads(), macs / kMinMacsPerTask));
}

// Every tile of `args`, tiled for `threads`; a tile goes to whichever thread claims it next, and
// its result does not depend on which one that is.
template <class Out>
void run_tiles(const GemmArgsOf<bfloat16, Out>& args, std::int64_t threads) {
  if (args.m <= 0 || args.n <= 0 || args.batch <= 0) return;
  const GemmArgsOf<bfloat16, Out> g = with_leading_dims(args);
  const Tiling t = tiling_for(g, threads);
  const std::int64_t tiles = t.tiles_m * t.tiles_n;
  const std::int64_t tasks = g.batch * tiles;
  const auto run_task = [&](std::int64_t task) {
    const std::int64_t i0 = task % tiles / t.tiles_n * t.rows;
    const std::int64_t j0 = task % t.tiles_n * t.cols;
    tile_product(g, task / tiles, i0, std::min(t.rows, g.m - i0), j0, std::min(t.cols, g.n - j0), workspace(t));
  };
  if (threads <= 1) {
    for (std::int64_t task = 0; task < tasks; ++task) run_task(task);
    return;
  }
  std::atomic<std::int64_t> next{0};
  parallel_for(threads, 1, [&](std::int64_t, std::int64_t) {
    for (std::int64_t task = next.fetch_add(1); task < tasks; task = next.fetch_add(1)) run_task(task);
  });
}

}  // namespace

void widened_gemm(const GemmBf16Args& args) { run_tiles(args, threads_for(args)); }
void widened_gemm(const GemmBf16Float32Args& args) { run_tiles(args, threads_for(args)); }
void widened_gemm_serial(const GemmBf16Args& args) { run_tiles(args, 1); }
void widened_gemm_serial(const GemmBf16Float32Args& args) { run_tiles(args, 1); }

std::size_t widened_gemm_workspace_bytes(const GemmBf16Args& args) {
  const Tiling t = tiling_for(args, threads_for(args));
  return static_cast<std::size_t>(t.rows * t.depth + t.depth * t.cols + t.rows * t.cols) * sizeof(float);
}

}  // namespace kestrel::kernels
