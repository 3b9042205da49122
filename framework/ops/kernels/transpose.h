// transpose's kernel: permutes the axes of a dense tensor into another (framework/ops/shape_ops.h's
// ops::transpose checks the permutation; kernels/gemm.cpp transposes a product's C with it).
//
//   kernels::transpose(x, y, std::array{1, 0});   // y [N, M] = x [M, N] transposed
//
// It first drops size-1 axes and merges axes that stay adjacent, so most permutations become one
// of two fast loops:
//   - the last axis stays last ([B,T,H,D] -> [B,H,T,D]): contiguous rows, one memcpy each;
//   - otherwise a batch of 2-D transposes, in 32x32 tiles of 8x8 register blocks ([M,N] -> [N,M]).
// Elements are moved by their size, whatever their dtype.
#pragma once

#include <span>

#include "framework/core/tensor.h"

namespace kestrel::kernels {

/// out = in with its axes permuted: output axis k is input axis perm[k] (a valid permutation of
/// in's rank; out shaped accordingly, same dtype, neither aliasing the other).
void transpose(const TensorView& in, const TensorView& out, std::span<const int> perm);

}  // namespace kestrel::kernels
