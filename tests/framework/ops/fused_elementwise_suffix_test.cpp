// fused_elementwise with suffix inputs (a bias [N] against [B, N]): values, bitwise agreement with
// the broadcasting ops, thread independence, the explicit output shape, errors; and the formula
// text and the generic apply() the jit's fusion pass uses.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/thread_pool.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/fused_elementwise.h"
#include "tests/framework/ops/fused_elementwise_reference.h"
#include "tests/framework/ops/op_case.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;
using testing::float_bits;
using Value = ElementwiseBuilder::Value;
using Op = ElementwiseOpcode;

ElementwiseProgram bias_relu() {
  ElementwiseBuilder b;
  return b.build(b.relu(b.input(0) + b.input(1)));
}

TEST(FusedElementwiseSuffix, ASuffixRepeatsOverTheLeadingAxes) {
  Tensor x = Tensor::from_vector<float>({1, -2, 3, -4, 5, -6}, {2, 3});
  Tensor bias = Tensor::from_vector<float>({10, 1, -10}, {3});
  Tensor y = ops::fused_elementwise(bias_relu(), {x, bias});
  EXPECT_EQ(y.shape(), Shape({2, 3}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{11, 0, 0, 6, 6, 0}));
  // The output takes the highest-rank input's shape wherever it comes in the list.
  EXPECT_EQ(ops::fused_elementwise(bias_relu(), {bias, x}).to_vector<float>(), y.to_vector<float>());
}

// Rows shorter than a block (a strip of repeated rows), longer than a block (blocks follow the
// rows), and both at once; arithmetic and relu give the broadcasting ops' bits exactly.
TEST(FusedElementwiseSuffix, EqualsTheBroadcastingOpsBitForBit) {
  struct Case {
    Shape x, row, wide_row;
  };
  for (const Case& c :
       {Case{{256, 10}, {10}, {256, 10}}, Case{{128, 512}, {512}, {128, 512}}, Case{{33, 700}, {700}, {33, 700}},
        Case{{16, 4, 300}, {300}, {4, 300}}, Case{{7, 3, 5, 129}, {129}, {3, 5, 129}}}) {
    Tensor x = testing::uniform_tensor(c.x, 1), bias = testing::uniform_tensor(c.row, 2);
    Tensor scale = testing::uniform_tensor(c.wide_row, 3);
    ElementwiseBuilder b;
    Value xi = b.input(0), bi = b.input(1), si = b.input(2);
    ElementwiseProgram p = b.build(b.relu(xi * si + bi) - bi / (b.abs(si) + 1.0));
    Tensor want = ops::relu(x * scale + bias) - bias / (ops::abs(scale) + 1.0);
    EXPECT_EQ(float_bits(ops::fused_elementwise(p, {x, bias, scale})), float_bits(want)) << c.x.to_string();
  }
}

TEST(FusedElementwiseSuffix, ResultDoesNotDependOnTheThreadCount) {
  Tensor x = testing::uniform_tensor({50, 12, 601}, 4), row = testing::uniform_tensor({601}, 5);
  Tensor plane = testing::uniform_tensor({12, 601}, 6), narrow = testing::uniform_tensor({12, 601}, 7);
  ElementwiseBuilder b;
  Value xi = b.input(0), r = b.input(1), pl = b.input(2);
  ElementwiseProgram program = b.build(b.tanh(xi * pl) + b.exp(r - xi));
  const int threads = num_threads();
  set_num_threads(1);
  std::vector<std::uint32_t> one = float_bits(ops::fused_elementwise(program, {x, row, plane}));
  set_num_threads(2);
  std::vector<std::uint32_t> two = float_bits(ops::fused_elementwise(program, {x, row, plane}));
  set_num_threads(threads);
  EXPECT_EQ(one, two);
  std::vector<float> got = ops::fused_elementwise(program, {x, row, narrow}).to_vector<float>();
  std::vector<float> want = testing::interpret_in_double(program, {x, row, narrow}).to_vector<float>();
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-6 * (1.0 + std::fabs(want[i]))) << i;
}

TEST(FusedElementwiseSuffix, AGivenShapeCanBeWiderThanEveryInput) {
  Tensor row = Tensor::from_vector<float>({1, 2, 3}, {3});
  ElementwiseBuilder b;
  Value r = b.input(0), s = b.input(1);
  Tensor y = ops::fused_elementwise(b.build(r * s), {row, Tensor::scalar(2.0)}, {.shape = Shape{2, 3}});
  EXPECT_EQ(y.shape(), Shape({2, 3}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{2, 4, 6, 2, 4, 6}));
  // A program that is one suffix input repeats it; one that is a scalar fills.
  EXPECT_EQ(ops::fused_elementwise(b.build(r), {row, Tensor::scalar(0.0)}, {.shape = Shape{2, 3}}).to_vector<float>(),
            (std::vector<float>{1, 2, 3, 1, 2, 3}));
  Tensor filled = ops::fused_elementwise(b.build(s * 4.0), {row, Tensor::scalar(0.5)}, {.shape = Shape{2, 2, 3}});
  EXPECT_EQ(filled.to_vector<float>(), std::vector<float>(12, 2.0f));
}

TEST(FusedElementwiseSuffix, InputsThatAreNotSuffixesAreRejected) {
  ElementwiseProgram p = bias_relu();
  std::string m = error_message<ShapeError>([&] {
    ops::fused_elementwise(p, {Tensor::zeros({4, 3}), Tensor::zeros({2, 3})});
  });
  EXPECT_TRUE(contains(m, "[fused_elementwise] input 1 is float32[2,3] but input 0 is float32[4,3]")) << m;
  EXPECT_TRUE(contains(m, "a suffix of it")) << m;
  // A column [B, 1] is a broadcast, but not a suffix.
  m = error_message<ShapeError>([&] { ops::fused_elementwise(p, {Tensor::zeros({4, 3}), Tensor::zeros({4, 1})}); });
  EXPECT_TRUE(contains(m, "input 1 is float32[4,1]")) << m;
  m = error_message<ShapeError>([&] {
    ops::fused_elementwise(p, {Tensor::zeros({3}), Tensor::zeros({3})}, {.shape = Shape{3, 2}});
  });
  EXPECT_TRUE(contains(m, "input 0 is float32[3] but the output shape is [3,2]")) << m;
}

TEST(ElementwiseProgram, ToExpressionReadsAsAFormula) {
  EXPECT_EQ(bias_relu().to_expression(), "relu((in0 + in1))");
  ElementwiseBuilder b;
  Value x = b.input(0), y = b.input(1);
  Value e = b.exp(-x);  // used twice: named once
  Value mask = b.greater(x, y);
  ElementwiseProgram p = b.build(b.select(mask, e / (e + 1.0), b.maximum(x, b.constant(0.5))));
  EXPECT_EQ(p.to_expression(), "t3 = exp(-in0); select((in0 > in1), (t3 / (t3 + 1)), maximum(in0, 0.5))");
  EXPECT_EQ(b.build(x).to_expression(), "in0");
}

TEST(ElementwiseBuilder, ApplyEmitsAnyComputingOpcode) {
  ElementwiseBuilder b;
  Value x = b.input(0), y = b.input(1);
  const std::vector<Value> pair{x, y};
  EXPECT_EQ(b.apply(Op::subtract, pair).reg(), b.subtract(x, y).reg());
  EXPECT_EQ(b.apply(Op::tanh, std::span(&x, 1)).reg(), b.tanh(x).reg());
  std::string m = error_message<ValueError>([&] { b.apply(Op::exp, pair); });
  EXPECT_TRUE(contains(m, "apply(exp) got 2 values; it takes 1")) << m;
  m = error_message<ValueError>([&] { b.apply(Op::input, {}); });
  EXPECT_TRUE(contains(m, "apply(input)")) << m;
}

}  // namespace
}  // namespace kestrel
