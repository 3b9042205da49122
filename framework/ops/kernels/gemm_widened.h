// bfloat16 products on the float32 kernel, for CPUs where oneDNN has no bfloat16 matmul (below
// AVX-512): C is cut into tiles, and each tile sums its product over blocks of k. A block of A
// and one of B are widened to float32 in the calling thread's workspace, multiplied by
// gemm_serial into a float32 tile of C, and the tile is rounded once at the end (or, for a
// float32 C, the blocks add into C itself). The workspace is bounded by the block sizes, not by
// the operands (widened_gemm_workspace_bytes).
//
//   kernels::widened_gemm(args);   // what kernels::gemm(GemmBf16Args) runs below AVX-512
//
// The tiles depend on the shape and kestrel::num_threads() only, so results are bitwise
// reproducible for one CPU level and thread count, whichever threads run the tiles.
//
// kernels_bench (AVX2, 1 thread, median of 30), GFLOP/s bfloat16 vs float32: n = 256 82 vs 80,
// 512 59 vs 61, 1024 63 vs 76, 2048 59 vs 79; [4096,128] x [128,512] 55 vs 64 (PyTorch 1.13's
// bfloat16 matmul without AVX-512: 4-5). 512-deep blocks and 512 x 512 tiles measured no better.
#pragma once

#include <cstddef>

#include "framework/ops/kernels/gemm.h"

namespace kestrel::kernels {

/// The product split into tiles over the thread pool.
void widened_gemm(const GemmBf16Args& args);
void widened_gemm(const GemmBf16Float32Args& args);

/// The product on the calling thread, in the tiles one thread would use.
void widened_gemm_serial(const GemmBf16Args& args);
void widened_gemm_serial(const GemmBf16Float32Args& args);

/// The most workspace one thread of widened_gemm holds for `args`, in bytes.
std::size_t widened_gemm_workspace_bytes(const GemmBf16Args& args);

/// `g` with the leading dimensions left 0 set to the dense ones (gemm.cpp).
template <class T, class Out>
GemmArgsOf<T, Out> with_leading_dims(GemmArgsOf<T, Out> g);

}  // namespace kestrel::kernels
