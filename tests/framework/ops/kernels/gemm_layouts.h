// The table of gemm layouts the kernel tests run (gemm_test.cpp in float32, gemm_bf16_test.cpp
// in bfloat16): each product with its operands laid out as the row asks, and the GemmArgs that
// describe them.
//
//   for (const Layout& l : layouts()) { Problem p(l); gemm(p.args); ... }
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/ops/kernels/gemm.h"
#include "tests/support/thread_count_guard.h"

namespace kestrel::kernels {

// One table row: a product and how its operands lie in memory.
struct Layout {
  std::string label;
  std::int64_t m, n, k;
  bool transpose_a = false, transpose_b = false;
  std::int64_t pad_a = 0, pad_b = 0, pad_c = 0;  // added to the dense leading dimensions (0: pass ld 0)
  std::int64_t batch = 1;
  bool share_a = false, share_b = false;  // batch stride 0
  std::int64_t batch_gap = 0;             // floats between consecutive matrices beyond their size
  // An outer batch of `outer` groups of `batch` matrices. An interleaved operand keeps a group's
  // matrices row by row, as attention's [B, T, H, D] keeps its heads: rows `batch` matrices wide.
  std::int64_t outer = 1;
  bool interleave_a = false, interleave_b = false, interleave_c = false;
  float alpha = 1.0f, beta = 0.0f;
};

// `count` floats uniform in [-1, 1) from `seed`. Each (count, seed) is drawn once per process and
// copied after that: the layout tests build every problem many times, and in the sanitizer build,
// where the tests are unoptimized, drawing the numbers took longer than multiplying them.
inline const std::vector<float>& random_floats(std::size_t count, unsigned seed) {
  static std::map<std::pair<std::size_t, unsigned>, std::vector<float>> drawn;
  static std::mutex guard;  // replica_threads.h builds problems on several threads
  const std::lock_guard lock(guard);
  std::vector<float>& out = drawn[{count, seed}];
  if (out.size() != count) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    out.resize(count);
    for (float& v : out) v = uniform(rng);
  }
  return out;
}

// Operands laid out as the row asks and the GemmArgs that describe them; naive_product() is the
// expected result, in double.
struct Problem {
  Layout layout;
  std::vector<float> a, b, c;
  std::int64_t lda, ldb, ldc;  // the leading dimensions, also where args leaves them 0 (dense)
  GemmArgs args;

  // Where an operand's matrices lie: leading dimension, the strides of both batch levels, and
  // the floats the whole operand spans.
  struct Placement {
    std::int64_t ld, stride, outer_stride, size;
  };

  Placement place(std::int64_t rows, std::int64_t cols, std::int64_t pad, bool shared, bool interleaved) const {
    const Layout& l = layout;
    if (interleaved) {  // a group is [rows, batch, cols]: matrix p starts at column block p
      const std::int64_t ld = l.batch * cols + pad;
      return {ld, cols, rows * ld + l.batch_gap, l.outer * (rows * ld + l.batch_gap)};
    }
    const std::int64_t ld = cols + pad;
    const std::int64_t matrix = rows * ld + l.batch_gap;
    if (shared) return {ld, 0, 0, matrix};
    return {ld, matrix, l.batch * matrix, l.outer * l.batch * matrix};
  }

  explicit Problem(const Layout& l) : layout(l) {
    const std::int64_t a_rows = l.transpose_a ? l.k : l.m, a_cols = l.transpose_a ? l.m : l.k;
    const std::int64_t b_rows = l.transpose_b ? l.n : l.k, b_cols = l.transpose_b ? l.k : l.n;
    const Placement pa = place(a_rows, a_cols, l.pad_a, l.share_a, l.interleave_a);
    const Placement pb = place(b_rows, b_cols, l.pad_b, l.share_b, l.interleave_b);
    const Placement pc = place(l.m, l.n, l.pad_c, false, l.interleave_c);
    lda = pa.ld;
    ldb = pb.ld;
    ldc = pc.ld;
    a = random_floats(static_cast<std::size_t>(pa.size), 1);
    b = random_floats(static_cast<std::size_t>(pb.size), 2);
    c = random_floats(static_cast<std::size_t>(pc.size), 3);
    // Leading dims left 0 where they are dense, so that gemm fills them in.
    const auto given = [](const Placement& p, std::int64_t pad, bool interleaved) {
      return pad == 0 && !interleaved ? 0 : p.ld;
    };
    args = {.m = l.m,
            .n = l.n,
            .k = l.k,
            .a = a.data(),
            .lda = given(pa, l.pad_a, l.interleave_a),
            .transpose_a = l.transpose_a,
            .b = b.data(),
            .ldb = given(pb, l.pad_b, l.interleave_b),
            .transpose_b = l.transpose_b,
            .c = c.data(),
            .ldc = given(pc, l.pad_c, l.interleave_c),
            .alpha = l.alpha,
            .beta = l.beta,
            .batch = l.batch,
            .stride_a = pa.stride,
            .stride_b = pb.stride,
            .stride_c = pc.stride,
            .batch_outer = l.outer,
            .outer_stride_a = pa.outer_stride,
            .outer_stride_b = pb.outer_stride,
            .outer_stride_c = pc.outer_stride};
  }

  // c after the product, in double, at c's positions; padding and gaps keep their values. Call it
  // before gemm overwrites c. Raw pointers: unoptimized (sanitizer) builds would spend most of the
  // test in vector::operator[].
  std::vector<double> naive_product() const {
    const Layout& l = layout;
    const float* const pa = a.data();
    const float* const pb = b.data();
    std::vector<double> want(c.begin(), c.end());
    // Steps between elements of A's rows and B's columns, and along the depth: the innermost loop
    // holds no branch on the layout.
    const std::int64_t a_row_step = l.transpose_a ? 1 : lda, a_depth_step = l.transpose_a ? lda : 1;
    const std::int64_t b_column_step = l.transpose_b ? ldb : 1, b_depth_step = l.transpose_b ? 1 : ldb;
    for (std::int64_t o = 0; o < l.outer; ++o) {
      for (std::int64_t p = 0; p < l.batch; ++p) {
        const float* const a0 = pa + o * args.outer_stride_a + p * args.stride_a;
        const float* const b0 = pb + o * args.outer_stride_b + p * args.stride_b;
        double* const c0 = want.data() + o * args.outer_stride_c + p * args.stride_c;
        for (std::int64_t i = 0; i < l.m; ++i) {
          for (std::int64_t j = 0; j < l.n; ++j) {
            double sum = 0;
            for (std::int64_t q = 0, x = i * a_row_step, y = j * b_column_step; q < l.k;
                 ++q, x += a_depth_step, y += b_depth_step) {
              sum += double{a0[x]} * b0[y];
            }
            double& out = c0[i * ldc + j];
            out = l.alpha * sum + (l.beta == 0.0f ? 0.0 : l.beta * out);
          }
        }
      }
    }
    return want;
  }
};

inline const std::vector<Layout>& layouts() {
  static const std::vector<Layout> table = {
      {.label = "plain", .m = 5, .n = 7, .k = 3},
      {.label = "transpose_a", .m = 5, .n = 7, .k = 3, .transpose_a = true},
      {.label = "transpose_b", .m = 5, .n = 7, .k = 3, .transpose_b = true},
      {.label = "transpose_both", .m = 5, .n = 7, .k = 3, .transpose_a = true, .transpose_b = true},
      {.label = "leading_dims", .m = 6, .n = 5, .k = 4, .pad_a = 3, .pad_b = 2, .pad_c = 5},
      {.label = "leading_dims_transposed",
       .m = 6,
       .n = 5,
       .k = 4,
       .transpose_a = true,
       .transpose_b = true,
       .pad_a = 1,
       .pad_b = 7,
       .pad_c = 2},
      {.label = "batched", .m = 4, .n = 3, .k = 5, .batch = 6},
      {.label = "batched_gaps_transposed",
       .m = 4,
       .n = 3,
       .k = 5,
       .transpose_a = true,
       .pad_c = 2,
       .batch = 3,
       .batch_gap = 11},
      {.label = "shared_a", .m = 4, .n = 6, .k = 5, .batch = 5, .share_a = true},
      {.label = "shared_b_transposed", .m = 4, .n = 6, .k = 5, .transpose_b = true, .batch = 5, .share_b = true},
      {.label = "shared_both", .m = 3, .n = 2, .k = 4, .batch = 3, .share_a = true, .share_b = true},
      {.label = "beta_accumulates", .m = 6, .n = 5, .k = 7, .beta = 1.0f},
      {.label = "alpha_beta", .m = 6, .n = 5, .k = 7, .transpose_a = true, .alpha = 2.0f, .beta = 0.5f},
      {.label = "k0_overwrites", .m = 3, .n = 4, .k = 0},
      {.label = "k0_scales", .m = 3, .n = 4, .k = 0, .beta = 0.5f},
      // Deep enough to run in depth slices with AVX-512 (the last one shorter), each added into C.
      {.label = "depth_sliced", .m = 40, .n = 24, .k = 4100, .pad_a = 3, .pad_b = 5, .alpha = 2.0f, .beta = 0.5f},
      {.label = "depth_sliced_tiled", .m = 300, .n = 40, .k = 4200, .pad_c = 2},
      // Past the tiling threshold: cut along m, along n, by runs of the batch, and per matrix.
      {.label = "tiled_rows", .m = 401, .n = 97, .k = 130, .transpose_b = true, .pad_c = 3},
      {.label = "tiled_cols", .m = 90, .n = 450, .k = 120, .transpose_a = true, .beta = 1.0f},
      {.label = "tiled_batch_runs", .m = 128, .n = 128, .k = 128, .transpose_b = true, .batch = 8},
      {.label = "tiled_batch_matrices", .m = 200, .n = 150, .k = 96, .batch = 3, .share_b = true},
      // Two batch levels, as attention reads [B, T, H, D] in place: heads interleaved by rows.
      {.label = "outer_batch", .m = 4, .n = 3, .k = 5, .batch = 2, .outer = 3},
      {.label = "interleaved_heads",
       .m = 6,
       .n = 6,
       .k = 4,
       .transpose_b = true,
       .batch = 3,
       .outer = 2,
       .interleave_a = true,
       .interleave_b = true},
      {.label = "interleaved_out_transposed_a",
       .m = 5,
       .n = 4,
       .k = 6,
       .transpose_a = true,
       .pad_c = 1,
       .batch = 2,
       .outer = 3,
       .interleave_b = true,
       .interleave_c = true},
      {.label = "shared_a_outer", .m = 4, .n = 3, .k = 5, .batch = 2, .share_a = true, .outer = 2},
      // Tiled by runs of the outer batch, of the inner batch, and per matrix.
      {.label = "tiled_outer_runs",
       .m = 128,
       .n = 128,
       .k = 64,
       .transpose_b = true,
       .batch = 3,
       .outer = 4,
       .interleave_a = true,
       .interleave_b = true},
      {.label = "tiled_inner_runs",
       .m = 128,
       .n = 64,
       .k = 128,
       .batch = 4,
       .outer = 3,
       .interleave_b = true,
       .interleave_c = true},
      {.label = "tiled_outer_matrices", .m = 160, .n = 96, .k = 128, .batch = 3, .outer = 3, .interleave_c = true},
      // A short side of C and k >= 256: Eigen's packed kernel below AVX-512 (gemm.cpp), whole and tiled.
      {.label = "long_k_short_side", .m = 300, .n = 40, .k = 300, .transpose_a = true, .pad_a = 4, .beta = 1.0f},
      {.label = "long_k_shared_a", .m = 20, .n = 64, .k = 280, .transpose_b = true, .batch = 3, .share_a = true},
      {.label = "long_k_tiled", .m = 600, .n = 64, .k = 512, .transpose_a = true, .pad_c = 1},
      // Several blocks of k and tiles of C for bfloat16 below AVX-512 (gemm_widened.cpp), some partial.
      {.label = "k_blocks", .m = 40, .n = 24, .k = 1100, .transpose_a = true, .beta = 1.0f},
      {.label = "c_tiles",
       .m = 600,
       .n = 300,
       .k = 520,
       .pad_a = 2,
       .pad_b = 2,
       .pad_c = 2,
       .alpha = 0.5f,
       .beta = 0.25f},
  };
  return table;
}

// The jit moves a power-of-two factor on an operand into the GEMM's alpha
// (jit/passes/matmul_scale_folding.h), which keeps a program's bits only if alpha * (A B) is
// (alpha A) B to the bit on every path. check(l, scaled) runs for every layout, `scaled` being l
// with its alpha times kAlphaFactor, on 2 threads: whole products and tiles alike (alpha scales
// each element of C, wherever its tile runs).
inline constexpr float kAlphaFactor = 0.125f;

template <class Check>
void for_each_layout_with_its_alpha_scaled(Check check) {
  testing::ThreadCountGuard guard(2);
  for (const Layout& l : layouts()) {
    SCOPED_TRACE(l.label);
    Layout scaled = l;
    scaled.alpha *= kAlphaFactor;
    check(l, scaled);
  }
}

}  // namespace kestrel::kernels
