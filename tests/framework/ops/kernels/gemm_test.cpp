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
#include <memory>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "framework/core/cpu_capability.h"
#include "framework/core/thread_pool.h"
#include "framework/ops/kernels/onednn.h"
#include "framework/ops/kernels/primitive_cache.h"
#include "tests/framework/ops/kernels/gemm_layouts.h"
#include "tests/framework/ops/kernels/replica_threads.h"
#include "tests/support/same_bits.h"
#include "tests/support/thread_count_guard.h"

namespace kestrel::kernels {
namespace {

using kestrel::testing::same_bits;
using kestrel::testing::ThreadCountGuard;

void expect_matches(const Layout& l, const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  const double tolerance = 2e-6 * (1.0 + static_cast<double>(l.k));
  for (std::size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tolerance) << l.label << ": element " << i;
  }
}

TEST(Gemm, EveryLayoutMatchesANaiveProduct) {
  for (const Layout& l : layouts()) {
    const std::vector<double> want = Problem(l).naive_product();  // once: slow in unoptimized builds
    for (const int threads : {1, 2}) {
      ThreadCountGuard guard(threads);
      SCOPED_TRACE(l.label + ", threads " + std::to_string(threads));
      Problem p(l);
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

TEST(Gemm, TheSameBitsWhereverTheTilesRun) {
  // Replicas run their kernels inline under a SerialKernelsScope, on several threads at once; the
  // tiles still depend on num_threads() alone, so every replica computes the bits one would.
  ThreadCountGuard guard(2);
  for (const Layout& l : layouts()) {
    SCOPED_TRACE(l.label);
    const std::vector<float> pooled = product(l, false);
    EXPECT_TRUE(same_bits(product(l, true), pooled)) << "under a SerialKernelsScope";
    for (const auto& r : testing::on_replica_threads(4, [&] { return product(l, true); })) {
      EXPECT_TRUE(same_bits(r, pooled)) << "on a replica thread";
    }
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

// A tall product with a transposed A (a weight gradient X^T dY with many more inputs than
// outputs) runs as its transpose where oneDNN packs, and must give the values of the same product
// into a strided C, which runs as written. m = 4n, k = 1024 and 2^28 multiply-adds: the smallest
// such.
template <class T, class Args>
void expect_tall_transposed_product_as_written(double tolerance) {
  ThreadCountGuard guard(2);
  const std::int64_t m = 1024, n = 256, k = 1024, strided_ldc = n + 16;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<T> a_t(static_cast<std::size_t>(k * m)), b(static_cast<std::size_t>(k * n));
  for (T& v : a_t) v = T(uniform(rng));
  for (T& v : b) v = T(uniform(rng));
  std::vector<T> dense(static_cast<std::size_t>(m * n)), strided(static_cast<std::size_t>(m * strided_ldc));
  gemm(Args{.m = m, .n = n, .k = k, .a = a_t.data(), .transpose_a = true, .b = b.data(), .c = dense.data()});
  gemm(Args{.m = m,
            .n = n,
            .k = k,
            .a = a_t.data(),
            .transpose_a = true,
            .b = b.data(),
            .c = strided.data(),
            .ldc = strided_ldc});
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      const auto got = static_cast<double>(static_cast<float>(dense[static_cast<std::size_t>(i * n + j)]));
      const auto want = static_cast<double>(static_cast<float>(strided[static_cast<std::size_t>(i * strided_ldc + j)]));
      // Sums of k products added in another order: float32's rounding over k terms, as
      // expect_matches allows, plus `tolerance` relative to the value.
      ASSERT_NEAR(got, want, tolerance * std::fabs(want) + 2e-6 * (1.0 + static_cast<double>(k)))
          << "C[" << i << ", " << j << "]";
    }
  }
}

TEST(Gemm, ATallProductOfATransposedAHasTheValuesOfTheProductAsWritten) {
  expect_tall_transposed_product_as_written<float, GemmArgs>(0.0);
  // bfloat16 C is rounded once from sums that may be added in another order: one ulp apart at most.
  expect_tall_transposed_product_as_written<bfloat16, GemmBf16Args>(1.0 / 128);
}

TEST(Gemm, APowerOfTwoAlphaHasTheBitsOfTheOperandScaledByIt) {
  for_each_layout_with_its_alpha_scaled([](const Layout& l, const Layout& scaled) {
    Problem by_alpha(scaled);
    gemm(by_alpha.args);
    Problem by_operand(l);
    for (float& x : by_operand.a) x *= kAlphaFactor;
    gemm(by_operand.args);
    EXPECT_TRUE(same_bits(by_alpha.c, by_operand.c));
  });
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
