// kernels::gemm on bfloat16 operands (GemmBf16Args, GemmBf16Float32Args), over every layout of
// gemm_layouts.h (transposes, leading dims, batches, alpha and beta, k spanning several blocks and
// C several tiles): against the float32 gemm on the same values within bfloat16's rounding; the
// same bits run to run and wherever the tiles run; and, below AVX-512, a workspace bounded by the
// block sizes whatever the product. framework_ops_test runs once per CPU level the machine has.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "framework/core/thread_pool.h"
#include "framework/ops/kernels/gemm.h"
#include "framework/ops/kernels/gemm_widened.h"
#include "tests/framework/ops/kernels/gemm_layouts.h"
#include "tests/framework/ops/kernels/replica_threads.h"
#include "tests/support/thread_count_guard.h"

namespace kestrel::kernels {
namespace {

using kestrel::testing::ThreadCountGuard;

template <class T>
std::vector<T> rounded(const std::vector<float>& v) {
  std::vector<T> out;
  out.reserve(v.size());
  for (const float x : v) out.push_back(T(static_cast<float>(bfloat16(x))));
  return out;
}

// A layout's operands rounded to bfloat16 (C to Out), and the float32 gemm's result on the same
// values, which are then exactly representable in both.
template <class Out>
struct RoundedOperands {
  std::vector<bfloat16> a, b;
  std::vector<Out> c;
  std::vector<float> float32_result;

  explicit RoundedOperands(const Layout& l) {
    Problem wide(l);
    a = rounded<bfloat16>(wide.a);
    b = rounded<bfloat16>(wide.b);
    c = rounded<Out>(wide.c);
    for (std::vector<float>* v : {&wide.a, &wide.b, &wide.c}) {
      for (float& x : *v) x = static_cast<float>(bfloat16(x));  // in place: wide.args points into them
    }
    gemm(wide.args);
    float32_result = wide.c;
  }
};

// Each layout's operands are rounded once per process and copied after that: the tests build
// every problem many times, and in the unoptimized sanitizer build rounding took longer than the
// products under test. The key holds alpha, which the scaled layouts change under the same label.
template <class Out>
const RoundedOperands<Out>& rounded_operands(const Layout& l) {
  static std::map<std::pair<std::string, float>, RoundedOperands<Out>> rounded;
  static std::mutex guard;  // replica_threads.h builds problems on several threads
  const std::lock_guard lock(guard);
  return rounded.try_emplace({l.label, l.alpha}, l).first->second;
}

// A problem of bfloat16 operands, laid out as the float32 Problem of the same layout.
template <class Out>
struct Bf16Problem {
  std::vector<bfloat16> a, b;
  std::vector<Out> c;
  GemmArgsOf<bfloat16, Out> args;
  std::vector<float> float32_result;

  explicit Bf16Problem(const Layout& l) {
    const RoundedOperands<Out>& operands = rounded_operands<Out>(l);
    a = operands.a;
    b = operands.b;
    c = operands.c;
    float32_result = operands.float32_result;
    const GemmArgs w = Problem(l).args;  // its leading dimensions and strides, not its pointers
    args = {.m = w.m,
            .n = w.n,
            .k = w.k,
            .a = a.data(),
            .lda = w.lda,
            .transpose_a = w.transpose_a,
            .b = b.data(),
            .ldb = w.ldb,
            .transpose_b = w.transpose_b,
            .c = c.data(),
            .ldc = w.ldc,
            .alpha = w.alpha,
            .beta = w.beta,
            .batch = w.batch,
            .stride_a = w.stride_a,
            .stride_b = w.stride_b,
            .stride_c = w.stride_c,
            .batch_outer = w.batch_outer,
            .outer_stride_a = w.outer_stride_a,
            .outer_stride_b = w.outer_stride_b,
            .outer_stride_c = w.outer_stride_c};
  }
};

// Within one rounding to bfloat16 (half an ulp, at most 2^-8 relative) when C is bfloat16, plus
// float32 sums in another order: a few float32 ulps of the sum of |products|, at most k of them.
template <class Out>
void expect_near_float32(const Layout& l, const Bf16Problem<Out>& p) {
  const double rounding = std::is_same_v<Out, float> ? 0.0 : std::ldexp(1.0, -8);
  const double order = 1e-6 * (1.0 + static_cast<double>(l.k));
  ASSERT_EQ(p.c.size(), p.float32_result.size());
  for (std::size_t i = 0; i < p.c.size(); ++i) {
    const double want = p.float32_result[i];
    ASSERT_NEAR(static_cast<float>(p.c[i]), want, std::abs(want) * rounding + order) << l.label << ": element " << i;
  }
}

template <class Out>
void check_against_float32() {
  for (const int threads : {1, 2}) {
    ThreadCountGuard guard(threads);
    for (const Layout& l : layouts()) {
      SCOPED_TRACE(l.label + ", threads " + std::to_string(threads));
      Bf16Problem<Out> p(l);
      gemm(p.args);
      expect_near_float32(l, p);
      Bf16Problem<Out> serial(l);
      gemm_serial(serial.args);
      expect_near_float32(l, serial);
    }
  }
}

TEST(GemmBf16, MatchesFloat32WithinBfloat16Rounding) { check_against_float32<bfloat16>(); }

TEST(GemmBf16, Float32OutputMatchesFloat32) { check_against_float32<float>(); }

std::vector<std::uint16_t> product_bits(const Layout& l, bool serial_scope) {
  Bf16Problem<bfloat16> p(l);
  if (serial_scope) {
    SerialKernelsScope serial;
    gemm(p.args);
  } else {
    gemm(p.args);
  }
  std::vector<std::uint16_t> bits;
  for (const bfloat16 v : p.c) bits.push_back(v.bits);
  return bits;
}

TEST(GemmBf16, TheSameBitsRunToRunAndWhereverTheTilesRun) {
  ThreadCountGuard guard(2);
  for (const Layout& l : layouts()) {
    SCOPED_TRACE(l.label);
    const std::vector<std::uint16_t> first = product_bits(l, false);
    EXPECT_EQ(product_bits(l, false), first) << "a second run";
    EXPECT_EQ(product_bits(l, true), first) << "under a SerialKernelsScope";
    for (const auto& r : testing::on_replica_threads(3, [&] { return product_bits(l, true); })) {
      EXPECT_EQ(r, first) << "on a replica thread";
    }
  }
}

// A power of two scales a bfloat16 exactly, so alpha * (A B) rounds to the bits of (alpha A) B,
// natively and widened.
TEST(GemmBf16, APowerOfTwoAlphaHasTheBitsOfTheOperandScaledByIt) {
  for_each_layout_with_its_alpha_scaled([](const Layout& l, const Layout& scaled) {
    Bf16Problem<bfloat16> by_alpha(scaled);
    gemm(by_alpha.args);
    Bf16Problem<bfloat16> by_operand(l);
    for (bfloat16& x : by_operand.a) x = bfloat16(kAlphaFactor * static_cast<float>(x));
    gemm(by_operand.args);
    ASSERT_EQ(by_alpha.c.size(), by_operand.c.size());
    EXPECT_EQ(std::memcmp(by_alpha.c.data(), by_operand.c.data(), by_alpha.c.size() * sizeof(bfloat16)), 0);
  });
}

TEST(GemmBf16, WidenedWorkspaceIsBoundedByTheBlocks) {
  // A [32768, 4096] x [4096, 4096] product, as a large activation times a weight, a deep batch,
  // and a very wide C: one thread's widened blocks and tile stay at three 256 x 256 float32 blocks.
  constexpr std::size_t kBound = 3 * 256 * 256 * sizeof(float);
  for (const int threads : {1, 2, 8}) {
    ThreadCountGuard guard(threads);
    EXPECT_LE(widened_gemm_workspace_bytes({.m = 32768, .n = 4096, .k = 4096}), kBound);
    EXPECT_LE(widened_gemm_workspace_bytes({.m = 512, .n = 512, .k = 100000, .transpose_a = true, .batch = 16}),
              kBound);
    EXPECT_LE(widened_gemm_workspace_bytes({.m = 3, .n = 1 << 20, .k = 1 << 12}), kBound);
  }
}

}  // namespace
}  // namespace kestrel::kernels
