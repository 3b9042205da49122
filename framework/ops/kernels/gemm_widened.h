// bfloat16 products on the float32 kernel, for CPUs where oneDNN has no bfloat16 matmul (below
// AVX-512): C is cut into tiles, and each tile sums its product over blocks of k. A block of A
// and one of B are widened to float32 in the calling thread's workspace, multiplied by
// gemm_serial into a float32 tile of C; the epilogue (bias, activation) goes on the tile, which
// is rounded once at the end (or, for a float32 C, the blocks add into C itself). The workspace is bounded by the block sizes, not by
// the operands (widened_gemm_workspace_bytes).
//
//   kernels::widened_gemm_on_this_thread(task);   // each of kernels::gemm's tasks below AVX-512
//
// kernels::gemm splits the product into tasks as for every element type (gemm.cpp); the tiles of
// a task depend on its shape alone, so results stay bitwise reproducible for one CPU level and
// thread count, whichever threads run the tasks.
//
// kernels_bench (AVX2, 1 thread, median of 30), GFLOP/s bfloat16 vs float32: n = 256 82 vs 80,
// 512 59 vs 61, 1024 63 vs 76, 2048 59 vs 79; [4096,128] x [128,512] 55 vs 64 (PyTorch 1.13's
// bfloat16 matmul without AVX-512: 4-5). 512-deep blocks and 512 x 512 tiles measured no better.
#pragma once

#include <cstddef>

#include "framework/ops/kernels/gemm.h"

namespace kestrel::kernels {

/// The whole product (leading dimensions filled in) on the calling thread, tile by tile: what
/// kernels::gemm runs for each of its tasks below AVX-512.
void widened_gemm_on_this_thread(const GemmBf16Args& g);
void widened_gemm_on_this_thread(const GemmBf16Float32Args& g);

/// The workspace one thread holds for a task of `args`, in bytes: at most three 256 x 256 blocks.
std::size_t widened_gemm_workspace_bytes(const GemmBf16Args& args);

}  // namespace kestrel::kernels
