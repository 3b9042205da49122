// The per-level kernel tables: the chosen one is cpu_capability()'s, and every level the CPU can
// run computes the same results. (The op-table and fused-kernel tests run again at each lower
// level under KESTREL_CPU_CAPABILITY; see tests/CMakeLists.txt.)
#include "framework/ops/kernels/cpu_kernels.h"

#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "framework/core/error.h"
#include "tests/support/cpu_levels.h"
#include "tests/support/error_message.h"

namespace kestrel::testing {
namespace {

std::vector<float> random_floats(std::size_t n) {
  std::mt19937 gen(7);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

TEST(CpuKernels, ChosenTableIsTheCapabilitysOne) {
  EXPECT_EQ(kernels::cpu().softmax, kernels::cpu_kernels_at(cpu_capability()).softmax);
}

TEST(CpuKernels, LevelsHaveTheirOwnKernels) {
  const auto levels = runnable_cpu_levels();
  for (std::size_t i = 1; i < levels.size(); ++i) {
    EXPECT_NE(kernels::cpu_kernels_at(levels[i]).softmax, kernels::cpu_kernels_at(levels[i - 1]).softmax);
  }
}

TEST(CpuKernels, LevelAboveTheCpuIsAnError) {
  if (detected_cpu_capability() == CpuCapability::avx512) GTEST_SKIP() << "this CPU runs every level";
  std::string m = error_message<ValueError>([] { kernels::cpu_kernels_at(CpuCapability::avx512); });
  EXPECT_TRUE(contains(m, "cannot run avx512")) << m;
}

// Softmax over both kinds of axis (contiguous rows, strided columns) at every level, against a
// double-precision reference: each level's vector exp is its own, so they agree to rounding.
TEST(CpuKernels, SoftmaxAgreesAtEveryLevel) {
  const Shape shape{5, 37, 19};
  std::vector<float> x = random_floats(static_cast<std::size_t>(shape.numel()));  // a view's data is mutable
  for (CpuCapability level : runnable_cpu_levels()) {
    for (int axis : {1, 2}) {
      for (bool log : {false, true}) {
        std::vector<float> y(x.size());
        kernels::cpu_kernels_at(level).softmax(TensorView{x.data(), shape, DType::float32},
                                               TensorView{y.data(), shape, DType::float32}, axis, log);
        const std::int64_t n = shape[axis];
        const std::int64_t inner = axis == 2 ? 1 : shape[2];
        for (std::int64_t o = 0; o < shape[0] * (axis == 2 ? shape[1] : 1); ++o) {
          for (std::int64_t c = 0; c < inner; ++c) {
            auto at = [&](std::int64_t k) { return static_cast<std::size_t>(o * n * inner + k * inner + c); };
            double m = x[at(0)], total = 0.0;
            for (std::int64_t k = 1; k < n; ++k) m = std::max(m, static_cast<double>(x[at(k)]));
            for (std::int64_t k = 0; k < n; ++k) total += std::exp(x[at(k)] - m);
            for (std::int64_t k = 0; k < n; ++k) {
              const double want = log ? x[at(k)] - m - std::log(total) : std::exp(x[at(k)] - m) / total;
              ASSERT_NEAR(y[at(k)], want, 2e-6 * (1.0 + std::fabs(want)))
                  << to_string(level) << " axis " << axis << (log ? " log_softmax" : " softmax");
            }
          }
        }
      }
    }
  }
}

// Each elementwise instruction at every level against baseline's, on full and uniform operands:
// the arithmetic, comparisons and select are exact at any width, so they agree bit for bit; the
// unary math runs on each level's own vector functions, so it agrees to rounding.
TEST(CpuKernels, ElementwiseStepsAgreeAtEveryLevel) {
  constexpr std::int64_t kN = 1037;  // not a multiple of a vector: a scalar tail too
  std::vector<float> a = random_floats(kN), b = random_floats(kN), mask(kN);
  for (float& x : a) x = 0.1f + std::fabs(x);  // in every unary function's domain
  for (std::int64_t i = 0; i < kN; ++i) mask[i] = i % 3 == 0 ? 1.0f : 0.0f;
  using Operands = std::array<kernels::ElementwiseOperand, 3>;
  const Operands full = {{{a.data()}, {b.data()}, {b.data()}}};
  const Operands mixed = {{{nullptr, 0.75f}, {a.data()}, {nullptr, -2.5f}}};
  const Operands selects = {{{mask.data()}, {a.data()}, {nullptr, -2.5f}}};
  auto run = [&](CpuCapability level, ElementwiseOpcode opcode, const Operands& args) {
    std::vector<float> y(kN);
    kernels::cpu_kernels_at(level).elementwise_step(opcode, args, y.data(), kN);
    return y;
  };
  for (ElementwiseOpcode opcode : kComputingOpcodes) {
    // Arithmetic, comparisons and selection (the broadcasting ops' opcodes) give the same bits at
    // every level; the functions (unary ones, gelu's gradient) use each level's vector math.
    const bool exact = op_kind(*opcode_op(opcode)) == OpKind::broadcast;
    for (const auto* args : {&full, &mixed, &selects}) {
      if ((args == &selects) != (opcode == ElementwiseOpcode::select)) continue;
      const std::vector<float> want = run(CpuCapability::baseline, opcode, *args);
      for (CpuCapability level : runnable_cpu_levels()) {
        const std::vector<float> got = run(level, opcode, *args);
        for (std::int64_t i = 0; i < kN; ++i) {
          if (exact) {
            ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want[i]))
                << opcode_name(opcode) << " at " << to_string(level) << ", element " << i;
          } else {
            // gelu's gradient scales its functions' rounding by dy, its second operand.
            const float* dy = opcode_arity(opcode) == 2 ? (*args)[1].data : nullptr;
            const double scale = dy != nullptr ? 1.0 + std::fabs(dy[i]) : 1.0;
            ASSERT_NEAR(got[i], want[i], 2e-6 * scale * (1.0 + std::fabs(want[i])))
                << opcode_name(opcode) << " at " << to_string(level) << ", element " << i;
          }
        }
      }
    }
  }
}

// Conversions at every level, on the values where rounding and special cases differ: ties to
// even both ways, the largest float (rounds up to infinity), infinities, signed zero, NaN (stays
// a NaN), subnormals; and in a run long enough that the vector loops (AVX512_BF16's too, where
// the CPU has it), not only their tails, see them.
TEST(CpuKernels, ConversionsAgreeAtEveryLevel) {
  const std::vector<std::uint32_t> special = {
      0x3F808000u,  // 1 + 2^-8: a tie, rounds down to the even 1.0 (0x3F80)
      0x3F818000u,  // a tie whose kept bit is odd: rounds up to 0x3F82
      0x3F80C000u,  // above the tie: rounds up to 0x3F81
      0x7F7FFFFFu,  // the largest float: rounds up to infinity
      0x7F800000u, 0xFF800000u, 0x80000000u,
      0x7FC00001u,  // a quiet NaN
      0x7F800001u,  // a signalling NaN, whose payload would round to infinity
      0x00000001u,  // the smallest subnormal: rounds to +0
      0x00400000u,  // a subnormal that bfloat16 keeps (AVX512_BF16's instruction would flush it)
      0x807FFFFFu,  // the largest negative subnormal: rounds up to the smallest normal
  };
  const std::vector<std::uint16_t> want_bits = {0x3F80, 0x3F82, 0x3F81, 0x7F80, 0x7F80, 0xFF80,
                                                0x8000, 0x7FC0, 0x7FC0, 0x0000, 0x0040, 0x8080};
  constexpr std::size_t kRepeats = 13;  // 156 elements: vector body and tail
  std::vector<float> x;
  for (std::size_t r = 0; r < kRepeats; ++r) {
    for (std::uint32_t u : special) x.push_back(std::bit_cast<float>(u));
  }
  const Shape shape{static_cast<std::int64_t>(x.size())};
  for (CpuCapability level : runnable_cpu_levels()) {
    const kernels::CpuKernels& k = kernels::cpu_kernels_at(level);
    std::vector<bfloat16> narrow(x.size());
    k.convert(TensorView{x.data(), shape, DType::float32}, TensorView{narrow.data(), shape, DType::bfloat16});
    std::vector<float> wide(x.size());
    k.convert(TensorView{narrow.data(), shape, DType::bfloat16}, TensorView{wide.data(), shape, DType::float32});
    for (std::size_t i = 0; i < x.size(); ++i) {
      const std::uint16_t want = want_bits[i % special.size()];
      ASSERT_EQ(narrow[i].bits, want) << to_string(level) << ", float bits 0x" << std::hex
                                      << special[i % special.size()];
      ASSERT_EQ(std::bit_cast<std::uint32_t>(wide[i]), std::uint32_t{want} << 16) << to_string(level);
    }
    const std::vector<std::int64_t> ints = {-3, 0, 7, (std::int64_t{1} << 40) + 1};
    std::vector<float> floats(ints.size());
    std::vector<std::uint8_t> bools(ints.size());
    const Shape n{static_cast<std::int64_t>(ints.size())};
    k.convert(TensorView{const_cast<std::int64_t*>(ints.data()), n, DType::int64},
              TensorView{floats.data(), n, DType::float32});
    k.convert(TensorView{const_cast<std::int64_t*>(ints.data()), n, DType::int64},
              TensorView{bools.data(), n, DType::bool_});
    EXPECT_EQ(floats, (std::vector<float>{-3.0f, 0.0f, 7.0f, 1099511627776.0f})) << to_string(level);
    EXPECT_EQ(bools, (std::vector<std::uint8_t>{1, 0, 1, 1})) << to_string(level);
  }
}

// Long runs of ordinary values, ties, NaNs and infinities, with no subnormal (so AVX512_BF16's
// instruction rounds them where the CPU has it) and with one in every 100 (so the groups holding
// one take the integer way): every level's conversion and round_bfloat16 instruction give the
// scalar rounding's bits.
TEST(CpuKernels, RoundingToBfloat16MatchesTheScalarRoundingOnLongRuns) {
  std::mt19937 gen(11);
  std::uniform_int_distribution<std::uint32_t> any_bits;
  for (const bool with_subnormals : {false, true}) {
    std::vector<float> x;
    for (std::uint32_t i = 0; i < 4000; ++i) {
      std::uint32_t u = any_bits(gen);
      if (i % 7 == 0) u = (u & 0xFFFF0000u) | 0x8000u;        // a tie
      if ((u & 0x7F800000u) == 0) u |= 0x3F800000u;           // no subnormal (nor zero) here...
      if (with_subnormals && i % 100 == 0) u &= 0x807FFFFFu;  // ...but for these
      x.push_back(std::bit_cast<float>(u));
    }
    const Shape shape{static_cast<std::int64_t>(x.size())};
    for (CpuCapability level : runnable_cpu_levels()) {
      const kernels::CpuKernels& k = kernels::cpu_kernels_at(level);
      std::vector<bfloat16> narrow(x.size());
      k.convert(TensorView{x.data(), shape, DType::float32}, TensorView{narrow.data(), shape, DType::bfloat16});
      std::vector<float> rounded(x.size());
      k.elementwise_step(ElementwiseOpcode::round_bfloat16, {{{x.data()}, {}, {}}}, rounded.data(), shape[0]);
      for (std::size_t i = 0; i < x.size(); ++i) {
        const std::uint16_t want = bfloat16(x[i]).bits;
        ASSERT_EQ(narrow[i].bits, want) << to_string(level) << ", float bits 0x" << std::hex
                                        << std::bit_cast<std::uint32_t>(x[i]);
        ASSERT_EQ(std::bit_cast<std::uint32_t>(rounded[i]), std::uint32_t{want} << 16) << to_string(level);
      }
    }
  }
}

}  // namespace
}  // namespace kestrel::testing
