// The table of gemm layouts the kernel tests run (gemm_test.cpp in float32, gemm_bf16_test.cpp
// in bfloat16): each product with its operands laid out as the row asks, and the GemmArgs that
// describe them.
//
//   for (const Layout& l : layouts()) { Problem p(l); gemm(p.args); ... }
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "framework/ops/kernels/gemm.h"

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
  float alpha = 1.0f, beta = 0.0f;
};

inline std::vector<float> random_floats(std::size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> out(count);
  for (float& v : out) v = uniform(rng);
  return out;
}

// Operands laid out as the row asks and the GemmArgs that describe them; naive_product() is the
// expected result, in double.
struct Problem {
  Layout layout;
  std::vector<float> a, b, c;
  std::int64_t lda, ldb, ldc;  // the leading dimensions, also where args leaves them 0 (dense)
  GemmArgs args;

  explicit Problem(const Layout& l) : layout(l) {
    const std::int64_t a_rows = l.transpose_a ? l.k : l.m, a_cols = l.transpose_a ? l.m : l.k;
    const std::int64_t b_rows = l.transpose_b ? l.n : l.k, b_cols = l.transpose_b ? l.k : l.n;
    lda = a_cols + l.pad_a;
    ldb = b_cols + l.pad_b;
    ldc = l.n + l.pad_c;
    const std::int64_t stride_a = l.share_a ? 0 : a_rows * lda + l.batch_gap;
    const std::int64_t stride_b = l.share_b ? 0 : b_rows * ldb + l.batch_gap;
    const std::int64_t stride_c = l.m * ldc + l.batch_gap;
    a = random_floats(static_cast<std::size_t>((l.share_a ? 1 : l.batch) * (a_rows * lda + l.batch_gap)), 1);
    b = random_floats(static_cast<std::size_t>((l.share_b ? 1 : l.batch) * (b_rows * ldb + l.batch_gap)), 2);
    c = random_floats(static_cast<std::size_t>(l.batch * stride_c), 3);
    args = {.m = l.m,
            .n = l.n,
            .k = l.k,
            .a = a.data(),
            .lda = l.pad_a == 0 ? 0 : lda,
            .transpose_a = l.transpose_a,
            .b = b.data(),
            .ldb = l.pad_b == 0 ? 0 : ldb,
            .transpose_b = l.transpose_b,
            .c = c.data(),
            .ldc = l.pad_c == 0 ? 0 : ldc,
            .alpha = l.alpha,
            .beta = l.beta,
            .batch = l.batch,
            .stride_a = stride_a,
            .stride_b = stride_b,
            .stride_c = stride_c};
  }

  // c after the product, in double, at c's positions; padding and gaps keep their values. Call it
  // before gemm overwrites c. Raw pointers: unoptimized (sanitizer) builds would spend most of the
  // test in vector::operator[].
  std::vector<double> naive_product() const {
    const Layout& l = layout;
    const float* const pa = a.data();
    const float* const pb = b.data();
    std::vector<double> want(c.begin(), c.end());
    for (std::int64_t p = 0; p < l.batch; ++p) {
      for (std::int64_t i = 0; i < l.m; ++i) {
        for (std::int64_t j = 0; j < l.n; ++j) {
          double sum = 0;
          for (std::int64_t q = 0; q < l.k; ++q) {
            const double x = pa[p * args.stride_a + (l.transpose_a ? q * lda + i : i * lda + q)];
            const double y = pb[p * args.stride_b + (l.transpose_b ? j * ldb + q : q * ldb + j)];
            sum += x * y;
          }
          double& out = want[p * args.stride_c + i * ldc + j];
          out = l.alpha * sum + (l.beta == 0.0f ? 0.0 : l.beta * out);
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
      // Past the tiling threshold: cut along m, along n, by runs of the batch, and per matrix.
      {.label = "tiled_rows", .m = 401, .n = 97, .k = 130, .transpose_b = true, .pad_c = 3},
      {.label = "tiled_cols", .m = 90, .n = 450, .k = 120, .transpose_a = true, .beta = 1.0f},
      {.label = "tiled_batch_runs", .m = 128, .n = 128, .k = 128, .transpose_b = true, .batch = 8},
      {.label = "tiled_batch_matrices", .m = 200, .n = 150, .k = 96, .batch = 3, .share_b = true},
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

}  // namespace kestrel::kernels
