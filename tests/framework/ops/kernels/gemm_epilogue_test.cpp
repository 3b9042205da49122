// kernels::gemm's epilogue: a bias on every row of C, then relu or GELU (exact and tanh), applied
// as C is stored. Against the product followed by Kestrel's own ops, for oneDNN's matmul and for
// the kernels that finish their rows themselves (Eigen's packed kernel for long, thin products
// below AVX-512: k >= 256), plain and batched, one thread and tiled over two, at the CPU level the
// test runs at (framework_ops_test runs at each); a float32 GELU, which is ops::gelu's own kernel
// run on the stored product, to the bit; a residual [m, n] added after the bias, with the bits of
// an add after the product on every path; and a bfloat16 bias and residual added before the
// product's one rounding, by oneDNN and by the widened kernel below AVX-512.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/kernels/gemm.h"
#include "framework/ops/matmul.h"
#include "tests/support/same_bits.h"
#include "tests/support/thread_count_guard.h"

namespace kestrel::kernels {
namespace {

using kestrel::testing::same_bits;
using kestrel::testing::ThreadCountGuard;

struct Case {
  std::string label;
  std::int64_t batch, m, n, k;
};

// C's expected value: the product through ops::matmul, the bias added, then the activation.
Tensor expected(const Tensor& a, const Tensor& b, const Tensor& bias, GemmActivation activation) {
  const Tensor z = ops::add(ops::matmul(a, b), bias);
  switch (activation) {
    case GemmActivation::none: return z;
    case GemmActivation::relu: return ops::relu(z);
    case GemmActivation::gelu_erf: return ops::gelu(z);
    case GemmActivation::gelu_tanh: return ops::gelu(z, {.approximate = true});
  }
  return z;
}

// A case's A, B and bias, drawn from keys `seed`, `seed` + 1 and `seed` + 2.
struct Operands {
  Tensor a, b, bias;
};

Operands operands(const Case& c, std::uint64_t seed) {
  const Shape a_shape = c.batch == 1 ? Shape{c.m, c.k} : Shape{c.batch, c.m, c.k};
  const Shape b_shape = c.batch == 1 ? Shape{c.k, c.n} : Shape{c.batch, c.k, c.n};
  return {random::normal(a_shape, random::Key(seed)), random::normal(b_shape, random::Key(seed + 1)),
          random::normal({c.n}, random::Key(seed + 2))};
}

// C from kernels::gemm with the bias, the residual (when defined) and the activation as its epilogue.
Tensor fused(const Case& c, const Operands& x, GemmActivation activation, const Tensor& residual = Tensor()) {
  Tensor out = Tensor::empty(c.batch == 1 ? Shape{c.m, c.n} : Shape{c.batch, c.m, c.n}, DType::float32);
  gemm(GemmArgs{.m = c.m,
                .n = c.n,
                .k = c.k,
                .a = x.a.data<float>(),
                .b = x.b.data<float>(),
                .c = static_cast<float*>(out.view().data),
                .batch = c.batch,
                .stride_a = c.m * c.k,
                .stride_b = c.k * c.n,
                .stride_c = c.m * c.n,
                .bias = x.bias.data<float>(),
                .residual = residual.defined() ? residual.data<float>() : nullptr,
                .activation = activation});
  return out;
}

std::string trace(const Case& c, GemmActivation activation, int threads) {
  return c.label + ", activation " + std::to_string(static_cast<int>(activation)) + ", threads " +
         std::to_string(threads);
}

TEST(GemmEpilogue, BiasThenActivationMatchTheOpsAfterTheProduct) {
  // Two threads tile a product of at least 2 x 2^21 multiply-adds: the wide case's tiles split the
  // columns (m < n), each reading its part of the bias.
  const std::vector<Case> cases = {{"small, oneDNN", 1, 12, 20, 16},
                                   {"wide, tiles split the columns and the bias", 1, 40, 512, 256},
                                   {"long and thin, the packed kernel below AVX-512", 1, 300, 24, 300},
                                   {"batched, the bias shared by every matrix", 3, 10, 16, 8}};
  for (const int threads : {1, 2}) {
    ThreadCountGuard guard(threads);
    for (const Case& c : cases) {
      const Operands x = operands(c, 1);
      for (const GemmActivation activation :
           {GemmActivation::none, GemmActivation::relu, GemmActivation::gelu_erf, GemmActivation::gelu_tanh}) {
        SCOPED_TRACE(trace(c, activation, threads));
        const std::vector<float> got = fused(c, x, activation).to_vector<float>();
        const std::vector<float> want = expected(x.a, x.b, x.bias, activation).to_vector<float>();
        ASSERT_EQ(got.size(), want.size());
        for (std::size_t i = 0; i < want.size(); ++i) {
          ASSERT_NEAR(got[i], want[i], 1e-5 * (1.0 + std::abs(want[i]))) << "element " << i;
        }
      }
    }
  }
}

// A float32 C takes GELU from ops::gelu's own kernel once the product is stored, so the fused
// epilogue gives the very bits of the ops run one after another. Rows of a multiple of 16 floats,
// so that every tile starts where a vector of the unfused op's does.
TEST(GemmEpilogue, AFloat32GeluHasTheBitsOfTheOpsAfterTheProduct) {
  const std::vector<Case> cases = {{"tall, tiles split the rows", 1, 512, 64, 128},
                                   {"wide, tiles split the columns", 1, 48, 512, 256},
                                   {"batched", 4, 32, 32, 64}};
  for (const int threads : {1, 2}) {
    ThreadCountGuard guard(threads);
    for (const Case& c : cases) {
      const Operands x = operands(c, 4);
      for (const GemmActivation activation : {GemmActivation::gelu_erf, GemmActivation::gelu_tanh}) {
        SCOPED_TRACE(trace(c, activation, threads));
        EXPECT_TRUE(same_bits(fused(c, x, activation), expected(x.a, x.b, x.bias, activation)));
      }
    }
  }
}

// The residual is added to the biased float32 product as C is stored: the bits of the biased
// product followed by ops::add, on oneDNN's matmul and on the kernels that finish their own rows
// (long and thin: the packed kernel below AVX-512), whole and tiled over two threads (each tile
// reading its part of the residual, by rows and by columns), one matrix and a batch.
TEST(GemmEpilogue, AResidualHasTheBitsOfAnAddAfterTheBiasedProduct) {
  const std::vector<Case> cases = {{"small, oneDNN", 1, 12, 20, 16},
                                   {"tall, tiles split the rows", 1, 512, 64, 128},
                                   {"wide, tiles split the columns", 1, 40, 512, 256},
                                   {"long and thin, the packed kernel below AVX-512", 1, 300, 24, 300},
                                   {"batched", 3, 10, 16, 8},
                                   {"batched over the threads", 4, 128, 64, 64}};
  for (const int threads : {1, 2}) {
    ThreadCountGuard guard(threads);
    for (const Case& c : cases) {
      const Operands x = operands(c, 7);
      const Tensor residual =
          random::normal(c.batch == 1 ? Shape{c.m, c.n} : Shape{c.batch, c.m, c.n}, random::Key(10));
      for (const GemmActivation activation : {GemmActivation::none, GemmActivation::relu}) {
        SCOPED_TRACE(trace(c, activation, threads));
        const Tensor sum = ops::add(fused(c, x, GemmActivation::none), residual);
        const Tensor want = activation == GemmActivation::relu ? ops::relu(sum) : sum;
        EXPECT_TRUE(same_bits(fused(c, x, activation, residual), want));
      }
    }
  }
}

// A product with nothing to multiply (k = 0) is its bias plus its residual.
TEST(GemmEpilogue, AnEmptyProductIsItsBiasPlusItsResidual) {
  const std::vector<float> bias = {1.0f, 2.0f}, residual = {10.0f, 20.0f, 30.0f, 40.0f};
  std::vector<float> c(4, -1.0f);
  gemm(GemmArgs{.m = 2, .n = 2, .k = 0, .c = c.data(), .bias = bias.data(), .residual = residual.data()});
  EXPECT_EQ(c, (std::vector<float>{11.0f, 22.0f, 31.0f, 42.0f}));
}

// The residual comes only after a plain product: with beta, C would be both read and replaced.
TEST(GemmEpilogue, AResidualWithBetaIsRejected) {
  const std::vector<float> a(4, 1.0f), b(4, 1.0f), residual(4, 1.0f);
  std::vector<float> c(4, 0.0f);
  try {
    gemm(GemmArgs{.m = 2,
                  .n = 2,
                  .k = 2,
                  .a = a.data(),
                  .b = b.data(),
                  .c = c.data(),
                  .beta = 1.0f,
                  .residual = residual.data()});
    FAIL() << "expected a ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("a bias, residual or activation needs alpha = 1 and beta = 0"),
              std::string::npos)
        << e.what();
  }
}

// A bfloat16 product gets its bias before its one rounding, whether oneDNN multiplies (AVX-512)
// or the widened kernel does (below): x . w = 1 + 2^-8 + 2^-12 exactly in float32, the bias is
// -2^-7, and the sum rounds to 1 - 2^-8; rounded first, the product would give exactly 1.
TEST(GemmEpilogue, ABfloat16BiasOrResidualIsAddedBeforeTheOneRounding) {
  const std::vector<float> x = {1.0f, 0x1p-8f, 0x1p-12f};
  std::vector<bfloat16> a, w(3, bfloat16(1.0f));
  for (float v : x) a.push_back(bfloat16(v));
  const bfloat16 bias(-0x1p-7f);
  bfloat16 c(0.0f);
  gemm(GemmBf16Args{.m = 1, .n = 1, .k = 3, .a = a.data(), .b = w.data(), .c = &c, .bias = &bias});
  EXPECT_EQ(static_cast<float>(c), 1.0f - 0x1p-8f);
  // An activation after it (relu, the identity here) keeps the one rounding.
  gemm(GemmBf16Args{.m = 1,
                    .n = 1,
                    .k = 3,
                    .a = a.data(),
                    .b = w.data(),
                    .c = &c,
                    .bias = &bias,
                    .activation = GemmActivation::relu});
  EXPECT_EQ(static_cast<float>(c), 1.0f - 0x1p-8f);
  // So does a residual in the bias's place.
  gemm(GemmBf16Args{.m = 1, .n = 1, .k = 3, .a = a.data(), .b = w.data(), .c = &c, .residual = &bias});
  EXPECT_EQ(static_cast<float>(c), 1.0f - 0x1p-8f);
}

}  // namespace
}  // namespace kestrel::kernels
