// The CPU kernel of ops::fused_elementwise (internal): a chunked interpreter of an
// ElementwiseProgram.
//
//   kernels::run_elementwise_program(program, input_views, output_view);
//
// The tensor is processed in blocks of at most kFusedBlock floats. For each block every
// instruction runs as one vectorized loop over small register buffers that stay in L1, so memory
// is read and written once per input and output however long the program. Blocks are split over
// the thread pool. Instructions whose operands are all scalars (constants, rank-0 inputs) run
// once, before the blocks, on one element.
//
// Suffix inputs (a bias [N] against [B, N]) are read in place, never expanded: one no longer
// than a block is first repeated into a short strip of whole rows (built once per call), so any
// block reads it contiguously from strip + lo % N; for longer ones the blocks follow the rows of
// the shortest such input (each row split into near-equal blocks), so no block crosses a row end
// and each reads input + lo % N directly.
//
// bfloat16 is never widened whole: a full-shaped or long-row input is widened a block at a time
// into a thread's buffer, a short one into its strip, and a bfloat16 output is computed into a
// block buffer and rounded as it is stored.
//
// Row-broadcast inputs (a keepdims reduction [B, T, 1] against [B, T, C], as layer norm's backward
// pass has them) hold one value per run of C elements: blocks also follow those runs, and within a
// block such an input is a single value, read once like a scalar.
#pragma once

#include <cstdint>
#include <span>

#include "framework/core/tensor.h"
#include "framework/ops/fused_elementwise.h"

namespace kestrel::kernels {

/// Floats per register buffer: 2 KB, so a program's live registers and the streamed inputs
/// share the L1 cache.
inline constexpr std::int64_t kFusedBlock = 512;

/// out = program(inputs). Inputs and out are float32 or bfloat16, each independently; each input
/// has out's shape, a suffix of it, or is rank-0.
void run_elementwise_program(const ElementwiseProgram& program, std::span<const TensorView> inputs,
                             const TensorView& out);

}  // namespace kestrel::kernels
