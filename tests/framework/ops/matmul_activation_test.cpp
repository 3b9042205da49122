// ops::matmul's activation option: a float32 product that nothing records takes its relu or GELU
// in the GEMM (no buffer for the pre-activation); under a gradient tape, and for bfloat16, it is
// the activation's op after the product. The activation's op's bits every way, and under a tape
// its gradient. (Under a jit trace it is recorded as its op too: tests/framework/jit/trace_test.cpp.)
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/buffer.h"
#include "framework/core/random.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/matmul.h"
#include "framework/ops/reduce.h"
#include "tests/support/same_bits.h"

namespace kestrel {
namespace {

using ops::MatmulActivation;
using testing::same_bits;

struct Activation {
  MatmulActivation option;
  std::function<Tensor(const Tensor&)> op;
};

const std::vector<Activation>& activations() {
  static const std::vector<Activation> all = {
      {MatmulActivation::relu, [](const Tensor& z) { return ops::relu(z); }},
      {MatmulActivation::gelu, [](const Tensor& z) { return ops::gelu(z); }},
      {MatmulActivation::gelu_tanh, [](const Tensor& z) { return ops::gelu(z, {.approximate = true}); }}};
  return all;
}

// Operands of each layout ops::matmul maps onto the primitive: [B,T,K] x [K,N] flattened, equal
// batches, and a plain matrix facing a batch; the bias [N].
struct Operands {
  std::string label;
  Tensor a, b, bias;
};

std::vector<Operands> layouts(DType dtype) {
  const auto normal = [dtype](const Shape& shape, std::uint64_t seed) {
    return ops::cast(random::normal(shape, random::Key(seed)), dtype);
  };
  return {{"flattened", normal({4, 6, 8}, 1), normal({8, 16}, 2), normal({16}, 3)},
          {"batched", normal({3, 5, 8}, 4), normal({3, 8, 7}, 5), normal({7}, 6)},
          {"broadcast", normal({5, 8}, 7), normal({3, 8, 7}, 8), normal({7}, 9)}};
}

// The result of `make`, and how many buffers it allocated.
std::pair<Tensor, std::int64_t> counted(const std::function<Tensor()>& make) {
  const std::int64_t before = allocator_stats().allocations;
  Tensor out = make();
  return {out, allocator_stats().allocations - before};
}

TEST(MatmulActivation, AnEagerFloat32ProductTakesItInTheGemmWithTheOpsBits) {
  for (const Operands& x : layouts(DType::float32)) {
    for (const Activation& activation : activations()) {
      SCOPED_TRACE(x.label + ", activation " + std::to_string(static_cast<int>(activation.option)));
      const auto [fused, fused_buffers] =
          counted([&] { return ops::matmul(x.a, x.b, {.bias = x.bias, .activation = activation.option}); });
      const auto [plain, plain_buffers] = counted([&] { return ops::matmul(x.a, x.b, {.bias = x.bias}); });
      EXPECT_TRUE(same_bits(fused, activation.op(plain)));
      EXPECT_EQ(fused_buffers, plain_buffers) << "the activation wrote a buffer of its own";
    }
  }
}

TEST(MatmulActivation, UnderATapeItIsItsOpWithItsGradient) {
  const Operands x = layouts(DType::float32).front();
  for (const Activation& activation : activations()) {
    SCOPED_TRACE(static_cast<int>(activation.option));
    std::vector<Tensor> got, want;
    {
      GradientTape tape;
      tape.watch(x.b);
      const Tensor y = ops::matmul(x.a, x.b, {.bias = x.bias, .activation = activation.option});
      got = {y, tape.gradient(ops::sum(ops::square(y)), {x.b})[0]};
    }
    {
      GradientTape tape;
      tape.watch(x.b);
      const Tensor y = activation.op(ops::matmul(x.a, x.b, {.bias = x.bias}));
      want = {y, tape.gradient(ops::sum(ops::square(y)), {x.b})[0]};
    }
    EXPECT_TRUE(same_bits(got[0], want[0])) << "the output";
    EXPECT_TRUE(same_bits(got[1], want[1])) << "the kernel's gradient";
  }
}

TEST(MatmulActivation, ABfloat16ProductKeepsItsPolicysOp) {
  for (const Operands& x : layouts(DType::bfloat16)) {
    SCOPED_TRACE(x.label);
    const auto [got, got_buffers] =
        counted([&] { return ops::matmul(x.a, x.b, {.bias = x.bias, .activation = MatmulActivation::gelu}); });
    const auto [plain, plain_buffers] = counted([&] { return ops::matmul(x.a, x.b, {.bias = x.bias}); });
    EXPECT_TRUE(same_bits(got, ops::gelu(plain)));
    EXPECT_GT(got_buffers, plain_buffers) << "a bfloat16 GELU ran in the GEMM, before the product's rounding";
  }
}

}  // namespace
}  // namespace kestrel
