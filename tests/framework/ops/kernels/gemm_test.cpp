// kernels::gemm on oneDNN (and Eigen's packed kernel for long, thin products below AVX-512):
// every layout GemmArgs describes (transposes, leading dims, batch strides, a shared operand, alpha
// and beta) against a naive product in double, on one thread and tiled over two; primitives built
// once per layout; the same bits wherever the tiles run and however the operands are aligned; and
// no OpenMP thread of oneDNN's own.
#include "framework/ops/kernels/gemm.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "framework/core/cpu_capability.h"
#include "framework/core/thread_pool.h"
#include "framework/ops/kernels/onednn.h"
#include "framework/ops/kernels/primitive_cache.h"
#include "tests/support/thread_count_guard.h"

namespace kestrel::kernels {
namespace {

using kestrel::testing::ThreadCountGuard;

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

std::vector<float> random_floats(std::size_t count, unsigned seed) {
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

void expect_matches(const Layout& l, const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  const double tolerance = 2e-6 * (1.0 + static_cast<double>(l.k));
  for (std::size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tolerance) << l.label << ": element " << i;
  }
}

const std::vector<Layout>& layouts() {
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
  };
  return table;
}

TEST(Gemm, EveryLayoutMatchesANaiveProduct) {
  for (const int threads : {1, 2}) {
    ThreadCountGuard guard(threads);
    for (const Layout& l : layouts()) {
      SCOPED_TRACE(l.label + ", threads " + std::to_string(threads));
      Problem p(l);
      const std::vector<double> want = p.naive_product();
      gemm(p.args);
      expect_matches(l, p.c, want);
      Problem serial(l);
      gemm_serial(serial.args);
      expect_matches(l, serial.c, want);
    }
  }
}

// A bitwise copy of c after gemm, for comparisons of where and how it ran.
std::vector<float> product(const Layout& l, bool serial_scope) {
  Problem p(l);
  if (serial_scope) {
    SerialKernelsScope serial;
    gemm(p.args);
  } else {
    gemm(p.args);
  }
  return p.c;
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

TEST(Gemm, TheSameBitsWhereverTheTilesRun) {
  // Replicas run their kernels inline under a SerialKernelsScope, on several threads at once; the
  // tiles still depend on num_threads() alone, so every replica computes the bits one would.
  ThreadCountGuard guard(2);
  for (const Layout& l : layouts()) {
    SCOPED_TRACE(l.label);
    const std::vector<float> pooled = product(l, false);
    EXPECT_TRUE(same_bits(product(l, true), pooled)) << "under a SerialKernelsScope";
    std::vector<std::vector<float>> replicas(4);
    std::vector<std::thread> threads;
    for (auto& r : replicas) threads.emplace_back([&] { r = product(l, true); });
    for (auto& t : threads) t.join();
    for (const auto& r : replicas) EXPECT_TRUE(same_bits(r, pooled)) << "on a replica thread";
  }
}

// A copy of `values` starting `offset` floats past a 64-byte boundary.
class OffsetCopy {
 public:
  OffsetCopy(const std::vector<float>& values, std::size_t offset)
      : storage_(static_cast<float*>(::operator new[]((values.size() + offset) * sizeof(float), std::align_val_t{64}))),
        data_(storage_.get() + offset) {
    std::copy(values.begin(), values.end(), data_);
  }
  float* data() const { return data_; }

 private:
  struct AlignedDelete {
    void operator()(float* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };
  std::unique_ptr<float, AlignedDelete> storage_;
  float* data_;
};

TEST(Gemm, TheSameBitsWhateverTheOperandsAlignment) {
  // The jit's arena and eager tensors place operands differently, and oneDNN's kernels run
  // faster or slower with the alignment of B; the result must not change with it.
  ThreadCountGuard guard(1);
  for (const Layout& l : layouts()) {
    SCOPED_TRACE(l.label);
    const Problem p(l);
    std::vector<std::vector<float>> results;
    for (const std::size_t offset : {0, 1, 4}) {
      const OffsetCopy a(p.a, offset), b(p.b, offset), c(p.c, offset);
      GemmArgs args = p.args;
      args.a = a.data();
      args.b = b.data();
      args.c = c.data();
      gemm(args);
      results.emplace_back(c.data(), c.data() + p.c.size());
    }
    EXPECT_TRUE(same_bits(results[1], results[0])) << "4-byte against 64-byte aligned";
    EXPECT_TRUE(same_bits(results[2], results[0])) << "16-byte against 64-byte aligned";
  }
}

TEST(Gemm, BuildsOnePrimitivePerLayoutAndReusesIt) {
  ThreadCountGuard guard(1);
  const Layout l = {.label = "unique", .m = 13, .n = 17, .k = 19, .transpose_b = true, .pad_a = 5, .beta = 1.0f};
  Problem first(l);
  gemm(first.args);
  const PrimitiveCacheStats after_first = primitive_cache().stats();
  for (int i = 0; i < 3; ++i) {
    Problem again(l);
    gemm(again.args);
  }
  const PrimitiveCacheStats after = primitive_cache().stats();
  EXPECT_EQ(after.misses, after_first.misses) << "the layout was built again";
  EXPECT_EQ(after.entries, after_first.entries);
  EXPECT_EQ(after.hits, after_first.hits + 3);

  Layout other = l;
  other.beta = 0.0f;  // beta is part of the primitive (a sum post-op)
  Problem p(other);
  gemm(p.args);
  EXPECT_EQ(primitive_cache().stats().misses, after.misses + 1);
}

int threads_in_process() {
  int count = 0;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* entry = readdir(dir)) count += entry->d_name[0] != '.';
    closedir(dir);
  }
  return count;
}

TEST(Gemm, OneDnnStartsNoThreadsOfItsOwn) {
  // oneDNN runs on the thread that calls it; Kestrel's pool supplies the parallelism. An OpenMP
  // team would add threads that oversubscribe the cores and spin-wait on them.
  ThreadCountGuard guard(2);
  const int before = threads_in_process();
  for (const Layout& l : layouts()) {
    Problem p(l);
    gemm(p.args);
  }
  // At most as many: a thread of an earlier test may still be on its way out.
  EXPECT_LE(threads_in_process(), before);
}

TEST(OneDnn, RunsAtKestrelsCpuLevel) {
  // Also run pinned lower (framework_ops_test@baseline): oneDNN must follow KESTREL_CPU_CAPABILITY.
  const std::string isa = onednn::effective_isa();
  switch (cpu_capability()) {
    case CpuCapability::baseline: EXPECT_EQ(isa, "sse41"); break;
    case CpuCapability::avx2: EXPECT_EQ(isa, "avx2"); break;
    case CpuCapability::avx512: EXPECT_EQ(isa.rfind("avx512_core", 0), 0u) << isa; break;
  }
  EXPECT_FALSE(onednn::cap_isa(CpuCapability::baseline)) << "a cap after the first kernel must not take effect";
}

}  // namespace
}  // namespace kestrel::kernels
