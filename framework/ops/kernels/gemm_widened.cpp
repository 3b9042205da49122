#include "framework/ops/kernels/gemm_widened.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "framework/ops/kernels/aligned_buffer.h"
#include "framework/ops/kernels/cpu_kernels.h"
#include "framework/ops/kernels/gemm_epilogue.h"

namespace kestrel::kernels {
namespace {

// A tile of C and the blocks of A and B that go into it, widened: 3 x 256 KiB, which stays in
// L2 beside the float32 kernel's own packing, and deep enough (k = 256) that widening costs one
// conversion per 128 multiply-adds of a square product.
constexpr std::int64_t kTileRows = 256;
constexpr std::int64_t kTileCols = 256;
constexpr std::int64_t kDepth = 256;

struct Tiling {
  std::int64_t rows, cols;  // of one tile of C (the last ones in a row or column may be shorter)
  std::int64_t depth;       // of one block of k
};

template <class Out>
Tiling tiling_for(const GemmArgsOf<bfloat16, Out>& g) {
  return {.rows = std::min(g.m, kTileRows), .cols = std::min(g.n, kTileCols), .depth = std::min(g.k, kDepth)};
}

// Each thread's widened blocks, and float32 tile for a bfloat16 C, grown to the largest tiling
// it has run.
struct Workspace {
  float *a, *b, *c;
};

Workspace workspace(const Tiling& t, bool float32_tile) {
  thread_local AlignedBuffer<float> a, b, c;
  const auto room = [](std::int64_t count) { return static_cast<std::size_t>(count); };
  return {a.get(room(t.rows * t.depth)), b.get(room(t.depth * t.cols)),
          float32_tile ? c.get(room(t.rows * t.cols)) : nullptr};
}

// dst [rows, cols] dense = src [rows, cols] with leading dimension ld, widened.
void widen(const bfloat16* src, std::int64_t ld, std::int64_t rows, std::int64_t cols, float* dst) {
  for (std::int64_t r = 0; r < rows; ++r) cpu().widen_bfloat16(src + r * ld, cols, dst + r * cols);
}

// C tile [i0, i0 + rows) x [j0, j0 + cols) of matrix `p`: the sum over blocks of k, each widened
// and multiplied by the float32 kernel, the first one with the caller's beta.
template <class Out>
void tile_product(const GemmArgsOf<bfloat16, Out>& g, std::int64_t p, std::int64_t i0, std::int64_t rows,
                  std::int64_t j0, std::int64_t cols, const Workspace& w) {
  const bfloat16* a = g.a + p * g.stride_a;
  const bfloat16* b = g.b + p * g.stride_b;
  Out* c = g.c + p * g.stride_c + i0 * g.ldc + j0;
  GemmArgs block{.m = rows,
                 .n = cols,
                 .a = w.a,
                 .transpose_a = g.transpose_a,
                 .b = w.b,
                 .transpose_b = g.transpose_b,
                 .alpha = g.alpha};
  if constexpr (std::is_same_v<Out, float>) {
    block.c = c;
    block.ldc = g.ldc;
  } else {
    block.c = w.c;
    block.ldc = cols;
    if (g.beta != 0.0f) widen(c, g.ldc, rows, cols, block.c);
  }
  std::int64_t q0 = 0;
  do {
    block.k = std::min(kDepth, g.k - q0);
    if (g.transpose_a) {
      widen(a + q0 * g.lda + i0, g.lda, block.k, rows, w.a);
      block.lda = rows;
    } else {
      widen(a + i0 * g.lda + q0, g.lda, rows, block.k, w.a);
      block.lda = block.k;
    }
    if (g.transpose_b) {
      widen(b + j0 * g.ldb + q0, g.ldb, cols, block.k, w.b);
      block.ldb = block.k;
    } else {
      widen(b + q0 * g.ldb + j0, g.ldb, block.k, cols, w.b);
      block.ldb = cols;
    }
    block.beta = q0 == 0 ? g.beta : 1.0f;
    gemm_serial(block);
    q0 += block.k;
  } while (q0 < g.k);
  // The epilogue on the float32 tile: the biased product is rounded once.
  const EpilogueAddends<Out> addends{
      .bias = g.bias == nullptr ? nullptr : g.bias + j0,
      .residual = g.residual == nullptr ? nullptr : g.residual + p * g.stride_c + i0 * g.ldc + j0,
      .residual_ld = g.ldc};
  apply_epilogue(block.c, rows, cols, block.ldc, addends, g.activation);
  if constexpr (!std::is_same_v<Out, float>) {
    for (std::int64_t r = 0; r < rows; ++r) cpu().round_to_bfloat16(block.c + r * cols, cols, c + r * g.ldc);
  }
}

template <class Out>
void on_this_thread(const GemmArgsOf<bfloat16, Out>& g) {
  const Tiling t = tiling_for(g);
  const Workspace w = workspace(t, !std::is_same_v<Out, float>);
  for (std::int64_t p = 0; p < g.batch; ++p) {
    for (std::int64_t i0 = 0; i0 < g.m; i0 += t.rows) {
      for (std::int64_t j0 = 0; j0 < g.n; j0 += t.cols) {
        tile_product(g, p, i0, std::min(t.rows, g.m - i0), j0, std::min(t.cols, g.n - j0), w);
      }
    }
  }
}

}  // namespace

void widened_gemm_on_this_thread(const GemmBf16Args& g) { on_this_thread(g); }
void widened_gemm_on_this_thread(const GemmBf16Float32Args& g) { on_this_thread(g); }

std::size_t widened_gemm_workspace_bytes(const GemmBf16Args& args) {
  const Tiling t = tiling_for(args);
  return static_cast<std::size_t>(t.rows * t.depth + t.depth * t.cols + t.rows * t.cols) * sizeof(float);
}

}  // namespace kestrel::kernels
