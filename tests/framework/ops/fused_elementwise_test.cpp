// fused_elementwise beyond the op table: the builder, the text form, equality and hashing,
// scalar broadcasting, errors, and bit-for-bit agreement with the standalone ops.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/error.h"
#include "framework/core/thread_pool.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/fused_elementwise.h"
#include "framework/ops/shape_ops.h"
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

ElementwiseProgram adam_update() {
  ElementwiseBuilder b;
  Value var = b.input(0), m = b.input(1), v = b.input(2), alpha = b.input(3);
  return b.build(var - m * alpha / (b.sqrt(v) + 1e-7));
}

TEST(ElementwiseBuilder, OperatorsEmitInstructionsInOrder) {
  ElementwiseBuilder b;
  Value x = b.input(0), y = b.input(1);
  ElementwiseProgram p = b.build((x - y) * 0.5);
  ASSERT_EQ(p.instructions().size(), 5u);
  EXPECT_EQ(p.instructions()[2].opcode, Op::subtract);
  EXPECT_EQ(p.instructions()[3].opcode, Op::constant);
  EXPECT_EQ(p.instructions()[3].value, 0.5f);
  EXPECT_EQ(p.instructions()[4].opcode, Op::multiply);
  EXPECT_EQ(p.instructions()[4].args[0], 2);
  EXPECT_EQ(p.instructions()[4].args[1], 3);
  EXPECT_EQ(p.result(), 4);
  EXPECT_EQ(p.num_inputs(), 2);
}

TEST(ElementwiseBuilder, IdenticalInstructionsAreEmittedOnce) {
  ElementwiseBuilder b;
  Value x = b.input(0);
  EXPECT_EQ(b.input(0).reg(), x.reg());
  EXPECT_EQ(b.sqrt(x).reg(), b.sqrt(x).reg());
  EXPECT_EQ(b.constant(0.1).reg(), b.constant(0.1f).reg());  // both round to the same float
  EXPECT_NE((x + 1.0).reg(), (1.0 + x).reg());               // operand order is kept
}

TEST(ElementwiseBuilder, BuildDropsDeadCodeButKeepsTheInputCount) {
  ElementwiseBuilder b;
  Value x = b.input(0);
  b.exp(b.input(3));  // unused
  Value y = b.tanh(x);
  b.log(y);  // after the result
  ElementwiseProgram p = b.build(y);
  EXPECT_EQ(p.to_string(), "%0 = input 0; %1 = tanh %0; -> %1");
  EXPECT_EQ(p.num_inputs(), 4);
  // The builder goes on: a second program from the same registers.
  EXPECT_EQ(b.build(b.exp(y)).to_string(), "%0 = input 0; %1 = tanh %0; %2 = exp %1; -> %2");
}

TEST(ElementwiseBuilder, ToStringShowsEveryInstruction) {
  ElementwiseBuilder b;
  // One statement per instruction: the order in which C++ evaluates arguments is unspecified.
  Value m = b.input(0), g = b.input(1);
  Value mask = b.greater(g, m);
  Value moved = m + (g - m) * 0.1;
  ElementwiseProgram p = b.build(b.select(mask, moved, -b.square(g)));
  EXPECT_EQ(p.to_string(),
            "%0 = input 0; %1 = input 1; %2 = greater %1, %0; %3 = subtract %1, %0; %4 = constant 0.1; "
            "%5 = multiply %3, %4; %6 = add %0, %5; %7 = square %1; %8 = negative %7; "
            "%9 = select %2, %6, %8; -> %9");
}

TEST(ElementwiseBuilder, ValuesOfAnotherBuilderAreRejected) {
  ElementwiseBuilder a, b;
  Value x = a.input(0), y = b.input(0);
  std::string m = error_message<ValueError>([&] { (void)(x + y); });
  EXPECT_TRUE(contains(m, "[fused_elementwise]") && contains(m, "two builders")) << m;
  m = error_message<ValueError>([&] { a.multiply(x, y); });
  EXPECT_TRUE(contains(m, "another ElementwiseBuilder")) << m;
  m = error_message<ValueError>([&] { a.build(y); });
  EXPECT_TRUE(contains(m, "build()")) << m;
  m = error_message<ValueError>([&] { a.input(-1); });
  EXPECT_TRUE(contains(m, "input(-1)")) << m;
}

TEST(ElementwiseProgram, EqualityAndHashFollowTheInstructions) {
  ElementwiseProgram p = adam_update(), q = adam_update();
  EXPECT_EQ(p, q);
  EXPECT_EQ(p.hash(), q.hash());
  EXPECT_EQ(std::hash<ElementwiseProgram>{}(p), p.hash());

  ElementwiseBuilder b;
  Value var = b.input(0), m = b.input(1), v = b.input(2), alpha = b.input(3);
  ElementwiseProgram other_epsilon = b.build(var - m * alpha / (b.sqrt(v) + 1e-8));
  EXPECT_NE(p, other_epsilon);
  EXPECT_NE(p.hash(), other_epsilon.hash());

  // Constants compare by their bits.
  ElementwiseBuilder c;
  ElementwiseProgram zero = c.build(c.input(0) + 0.0), negative_zero = c.build(c.input(0) + -0.0);
  EXPECT_NE(zero, negative_zero);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(c.build(c.input(0) * nan), c.build(c.input(0) * nan));
}

TEST(FusedElementwise, ScalarInputsBroadcast) {
  ElementwiseBuilder b;
  Value s = b.input(0), x = b.input(1), t = b.input(2);
  ElementwiseProgram p = b.build(s * x + t);
  Tensor x_value = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor y = ops::fused_elementwise(p, {Tensor::scalar(2.0), x_value, Tensor::scalar(0.5)});
  EXPECT_EQ(y.shape(), Shape({2, 3}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{2.5, 4.5, 6.5, 8.5, 10.5, 12.5}));

  Tensor scalar = ops::fused_elementwise(p, {Tensor::scalar(2.0), Tensor::scalar(3.0), Tensor::scalar(0.5)});
  EXPECT_EQ(scalar.shape(), Shape{});
  EXPECT_EQ(scalar.item(), 6.5);
}

TEST(FusedElementwise, ConstantAndIdentityProgramsFillAndCopy) {
  ElementwiseBuilder b;
  Value x = b.input(0);
  Tensor x_value = testing::uniform_tensor({700}, 5);
  EXPECT_EQ(float_bits(ops::fused_elementwise(b.build(x), {x_value})), float_bits(x_value));
  Tensor filled = ops::fused_elementwise(b.build(b.constant(3.0) * 2.0), {x_value});
  EXPECT_EQ(filled.shape(), Shape({700}));
  EXPECT_EQ(filled.to_vector<float>(), std::vector<float>(700, 6.0f));
  EXPECT_EQ(ops::fused_elementwise(b.build(b.exp(x)), {Tensor::zeros({0, 3})}).shape(), Shape({0, 3}));
}

// The same in either dtype: a program that is one input (full-shaped, a suffix or a row-broadcast)
// converts or repeats it; a constant one fills, rounded once.
TEST(FusedElementwise, ConstantAndIdentityProgramsConvertBetweenDtypes) {
  ElementwiseBuilder b;
  const ElementwiseProgram identity = b.build(b.input(0));
  const Shape shape{6, 40};
  for (const Tensor& x :
       {testing::uniform_tensor(shape, 31), testing::uniform_tensor({40}, 32), testing::uniform_tensor({6, 1}, 33)}) {
    const Tensor want = ops::broadcast_to(x, shape);
    for (DType in : {DType::float32, DType::bfloat16}) {
      for (DType out : {DType::float32, DType::bfloat16}) {
        const Tensor got = ops::fused_elementwise(identity, {ops::cast(x, in)}, {.shape = shape, .dtype = out});
        ASSERT_EQ(got.dtype(), out);
        EXPECT_EQ(float_bits(ops::cast(got, DType::float32)),
                  float_bits(ops::cast(ops::cast(ops::cast(want, in), out), DType::float32)))
            << x.shape().to_string() << " " << to_string(in) << " -> " << to_string(out);
      }
    }
  }
  ElementwiseBuilder constant;  // reads no input
  const Tensor filled = ops::fused_elementwise(constant.build(constant.constant(1.0 / 3.0)), {},
                                               {.shape = shape, .dtype = DType::bfloat16});
  EXPECT_EQ(ops::cast(filled, DType::float32).to_vector<float>(),
            std::vector<float>(240, static_cast<float>(bfloat16(1.0f / 3.0f))));
}

TEST(FusedElementwise, BadInputsNameTheInputAndTheFix) {
  ElementwiseProgram p = adam_update();
  Tensor full = Tensor::zeros({4, 3});
  std::string m = error_message<ValueError>([&] { ops::fused_elementwise(p, {full, full}); });
  EXPECT_TRUE(contains(m, "[fused_elementwise]") && contains(m, "reads 4 inputs but got 2")) << m;

  m = error_message<ShapeError>([&] {
    ops::fused_elementwise(p, {full, full, Tensor::zeros({3, 4}), Tensor::scalar(1.0)});
  });
  EXPECT_TRUE(contains(m, "[fused_elementwise] input 2 is float32[3,4] but input 0 is float32[4,3]")) << m;
  EXPECT_TRUE(contains(m, "rank-0")) << m;
  // A one-element tensor of rank 1 is not a scalar: general broadcasting is not supported.
  m = error_message<ShapeError>([&] { ops::fused_elementwise(p, {full, full, full, Tensor::zeros({1})}); });
  EXPECT_TRUE(contains(m, "input 3 is float32[1]")) << m;

  m = error_message<TypeError>([&] {
    ops::fused_elementwise(p, {full, Tensor::zeros({4, 3}, DType::int32), full, Tensor::scalar(1.0)});
  });
  EXPECT_TRUE(contains(m, "input 1 is int32[4,3]") && contains(m, "ops::cast")) << m;
}

TEST(FusedElementwise, RefusesToRunWhereGradientsAreWanted) {
  ElementwiseBuilder b;
  ElementwiseProgram p = b.build(b.exp(b.input(0)));
  Tensor x = Tensor::ones({3});
  GradientTape tape;
  tape.watch(x);
  std::string m = error_message<ValueError>([&] { ops::fused_elementwise(p, {x}); });
  EXPECT_TRUE(contains(m, "[fused_elementwise] input 0 needs a gradient") && contains(m, "not differentiable")) << m;
  // An input nothing differentiates is fine under the same tape.
  EXPECT_EQ(ops::fused_elementwise(p, {Tensor::zeros({3})}).to_vector<float>(), (std::vector<float>{1, 1, 1}));
}

TEST(FusedElementwise, Bfloat16IsComputedInFloat32AndRoundedOnce) {
  ElementwiseBuilder b;
  Value x = b.input(0), y = b.input(1);
  ElementwiseProgram p = b.build(x * y + x);
  Tensor xf = testing::uniform_tensor({1000}, 6), yf = testing::uniform_tensor({1000}, 7);
  Tensor xb = ops::cast(xf, DType::bfloat16), yb = ops::cast(yf, DType::bfloat16);
  Tensor out = ops::fused_elementwise(p, {xb, yb});
  EXPECT_EQ(out.dtype(), DType::bfloat16);
  Tensor want = ops::cast(ops::fused_elementwise(p, {ops::cast(xb, DType::float32), ops::cast(yb, DType::float32)}),
                          DType::bfloat16);
  EXPECT_EQ(ops::cast(out, DType::float32).to_vector<float>(), ops::cast(want, DType::float32).to_vector<float>());
  // A float32 full-shaped input makes the output float32; a float32 scalar does not.
  EXPECT_EQ(ops::fused_elementwise(p, {xb, yf}).dtype(), DType::float32);
  EXPECT_EQ(ops::fused_elementwise(p, {xb, Tensor::scalar(2.0)}).dtype(), DType::bfloat16);
}

// bfloat16 inputs of every layout the kernel reads (full-shaped, a suffix shorter and longer than a
// block, a row-broadcast, a scalar) beside float32 ones, into either output dtype: the same bits
// as the program on the widened inputs, rounded once.
TEST(FusedElementwise, Bfloat16InputsOfEveryLayoutAndEitherOutputDtype) {
  ElementwiseBuilder b;
  Value full = b.input(0), wide = b.input(1), short_row = b.input(2), long_row = b.input(3), per_row = b.input(4),
        scale = b.input(5);
  ElementwiseProgram p = b.build(b.tanh(full * scale + short_row) * wide - long_row / (b.abs(per_row) + 1.0));
  const Shape shape{6, 1100};
  const std::vector<Tensor> float32 = {testing::uniform_tensor(shape, 21),  testing::uniform_tensor(shape, 22),
                                       testing::uniform_tensor({1100}, 23), testing::uniform_tensor({6, 1100}, 24),
                                       testing::uniform_tensor({6, 1}, 25), Tensor::scalar(0.75)};
  for (int mask = 0; mask < 64; mask += 7) {  // which inputs are bfloat16
    std::vector<Tensor> inputs, widened;
    for (std::size_t k = 0; k < float32.size(); ++k) {
      const bool narrow = (mask >> k) & 1;
      inputs.push_back(narrow ? ops::cast(float32[k], DType::bfloat16) : float32[k]);
      widened.push_back(ops::cast(inputs.back(), DType::float32));
    }
    const Tensor want = ops::fused_elementwise(p, widened);
    for (DType dtype : {DType::float32, DType::bfloat16}) {
      const Tensor got = ops::fused_elementwise(p, inputs, {.dtype = dtype});
      ASSERT_EQ(got.dtype(), dtype);
      EXPECT_EQ(float_bits(ops::cast(got, DType::float32)),
                float_bits(ops::cast(ops::cast(want, dtype), DType::float32)))
          << "bfloat16 inputs mask " << mask << ", output " << to_string(dtype);
    }
  }
  std::string m = error_message<TypeError>([&] { ops::fused_elementwise(p, float32, {.dtype = DType::int32}); });
  EXPECT_TRUE(contains(m, "[fused_elementwise] the output dtype must be float32 or bfloat16")) << m;
}

TEST(FusedElementwise, RoundBfloat16IsTheCastThereAndBack) {
  ElementwiseBuilder b;
  ElementwiseProgram p = b.build(b.round_bfloat16(b.input(0)));
  const std::vector<float> values = {1.0f,
                                     1.00390625f,
                                     1.01171875f,
                                     -3.14159f,
                                     65504.0f,
                                     3.0e38f,
                                     1.0e-40f,
                                     -0.0f,
                                     std::numeric_limits<float>::infinity(),
                                     std::numeric_limits<float>::quiet_NaN()};
  // Repeated into 70 values: whole vector groups (AVX512_BF16's 32 too), then a tail.
  std::vector<float> repeated, want;
  for (int r = 0; r < 7; ++r) {
    for (float v : values) {
      repeated.push_back(v);
      want.push_back(static_cast<float>(bfloat16(v)));  // the scalar rounding
    }
  }
  Tensor x = Tensor::from_vector(repeated, {static_cast<std::int64_t>(repeated.size())});
  const Tensor w = Tensor::from_vector(want, x.shape());
  EXPECT_EQ(float_bits(ops::fused_elementwise(p, {x})), float_bits(w));
  EXPECT_EQ(float_bits(ops::cast(ops::cast(x, DType::bfloat16), DType::float32)), float_bits(w));
}

// The point of the op: one pass, the same bits as the ops it replaces.
TEST(FusedElementwise, AdamUpdateEqualsTheOpsOneByOneBitForBit) {
  // Many blocks, a partial last block, both threads; a multiple of 16 elements, so that the
  // standalone sqrt splits its work at an aligned element (see fused_elementwise.h).
  const Shape shape{1003, 400};
  Tensor var = testing::uniform_tensor(shape, 11), m = testing::uniform_tensor(shape, 12, -0.01, 0.01);
  Tensor v = testing::uniform_tensor(shape, 13, 0.0, 1e-4), g = testing::uniform_tensor(shape, 14, -0.1, 0.1);
  Tensor alpha = Tensor::scalar(3.3e-4);

  ElementwiseBuilder b;
  Value m_in = b.input(0), g_in = b.input(1), v_in = b.input(2);  // both programs take (m, g, v)
  ElementwiseProgram momentum = b.build(m_in + (g_in - m_in) * (1.0 - 0.9));
  ElementwiseProgram velocity = b.build(v_in + (b.square(g_in) - v_in) * (1.0 - 0.999));
  Tensor m_fused = ops::fused_elementwise(momentum, {m, g, v});
  Tensor v_fused = ops::fused_elementwise(velocity, {m, g, v});
  Tensor var_fused = ops::fused_elementwise(adam_update(), {var, m_fused, v_fused, alpha});

  Tensor m_ops = m + (g - m) * (1.0 - 0.9);
  Tensor v_ops = v + (ops::square(g) - v) * (1.0 - 0.999);
  Tensor var_ops = var - m_ops * alpha / (ops::sqrt(v_ops) + 1e-7);
  EXPECT_EQ(float_bits(m_fused), float_bits(m_ops));
  EXPECT_EQ(float_bits(v_fused), float_bits(v_ops));
  EXPECT_EQ(float_bits(var_fused), float_bits(var_ops));
}

TEST(FusedElementwise, ResultDoesNotDependOnTheThreadCount) {
  Tensor x = testing::uniform_tensor({300001}, 21), y = testing::uniform_tensor({300001}, 22, 0.5, 2.0);
  ElementwiseBuilder b;
  Value p = b.input(0), q = b.input(1);
  ElementwiseProgram program = b.build(b.tanh(p) * b.log(q) + b.exp(p / q));
  const int threads = num_threads();
  set_num_threads(1);
  std::vector<std::uint32_t> one = float_bits(ops::fused_elementwise(program, {x, y}));
  set_num_threads(2);
  std::vector<std::uint32_t> two = float_bits(ops::fused_elementwise(program, {x, y}));
  set_num_threads(threads);
  EXPECT_EQ(one, two);
}

// Each instruction against its standalone op, on a tensor that both process with Eigen's vector
// path throughout (one aligned chunk for the op, whole blocks for the kernel), plus a short tail.
TEST(FusedElementwise, EveryInstructionMatchesItsOpBitForBit) {
  Tensor x = testing::uniform_tensor({4099}, 31, -3.0, 3.0);
  Tensor y = testing::uniform_tensor({4099}, 32, -3.0, 3.0);
  Tensor positive = testing::uniform_tensor({4099}, 33, 0.01, 5.0);
  using Unary = std::function<Value(ElementwiseBuilder&, Value)>;
  const std::vector<std::tuple<const char*, Unary, Tensor (*)(const Tensor&), Tensor>> unary = {
      {"negative", [](ElementwiseBuilder& b, Value v) { return b.negative(v); }, ops::negative, x},
      {"abs", [](ElementwiseBuilder& b, Value v) { return b.abs(v); }, ops::abs, x},
      {"square", [](ElementwiseBuilder& b, Value v) { return b.square(v); }, ops::square, x},
      {"sqrt", [](ElementwiseBuilder& b, Value v) { return b.sqrt(v); }, ops::sqrt, positive},
      {"rsqrt", [](ElementwiseBuilder& b, Value v) { return b.rsqrt(v); }, ops::rsqrt, positive},
      {"exp", [](ElementwiseBuilder& b, Value v) { return b.exp(v); }, ops::exp, x},
      {"log", [](ElementwiseBuilder& b, Value v) { return b.log(v); }, ops::log, positive},
      {"tanh", [](ElementwiseBuilder& b, Value v) { return b.tanh(v); }, ops::tanh, x},
      {"sigmoid", [](ElementwiseBuilder& b, Value v) { return b.sigmoid(v); }, ops::sigmoid, x},
      {"relu", [](ElementwiseBuilder& b, Value v) { return b.relu(v); }, ops::relu, x},
      {"erf", [](ElementwiseBuilder& b, Value v) { return b.erf(v); }, ops::erf, x},
      {"gelu", [](ElementwiseBuilder& b, Value v) { return b.gelu(v); }, +[](const Tensor& t) { return ops::gelu(t); },
       x},
      {"gelu_tanh", [](ElementwiseBuilder& b, Value v) { return b.gelu_tanh(v); },
       +[](const Tensor& t) { return ops::gelu(t, {.approximate = true}); }, x},
  };
  for (const auto& [name, emit, op, input] : unary) {
    ElementwiseBuilder b;
    Tensor fused = ops::fused_elementwise(b.build(emit(b, b.input(0))), {input});
    EXPECT_EQ(float_bits(fused), float_bits(op(input))) << name;
  }
  using Binary = Tensor (*)(const Tensor&, const Tensor&);
  const std::vector<std::tuple<Op, Binary>> binary = {
      {Op::add, ops::add},           {Op::subtract, ops::subtract},
      {Op::multiply, ops::multiply}, {Op::divide, ops::divide},
      {Op::maximum, ops::maximum},   {Op::minimum, ops::minimum},
      {Op::greater, ops::greater},   {Op::greater_equal, ops::greater_equal},
      {Op::less, ops::less},         {Op::less_equal, ops::less_equal},
      {Op::equal, ops::equal},       {Op::not_equal, ops::not_equal},
  };
  // Rounded to a grid so that equal pairs occur for the comparisons.
  auto grid = [](const Tensor& t) { return ops::cast(ops::cast(t, DType::int32), DType::float32); };
  Tensor a = grid(x), c = grid(y);
  for (const auto& [opcode, op] : binary) {
    const bool comparison = opcode_arity(opcode) == 2 && opcode >= Op::greater;
    for (const auto& [lhs, rhs] :
         {std::pair{x, y}, std::pair{a, c}, std::pair{x, Tensor::scalar(0.5)}, std::pair{Tensor::scalar(-0.5), y}}) {
      ElementwiseBuilder b;
      const std::array<Value, 2> operands = {b.input(0), b.input(1)};
      ElementwiseProgram p = b.build(b.apply(opcode, operands));
      Tensor want = op(lhs, rhs);
      if (comparison) want = ops::cast(want, DType::float32);
      EXPECT_EQ(float_bits(ops::fused_elementwise(p, {lhs, rhs})), float_bits(want)) << opcode_name(opcode);
    }
  }
  ElementwiseBuilder b;
  Tensor mask = ops::greater(x, y);
  Tensor selected = ops::fused_elementwise(b.build(b.select(b.input(0), b.input(1), b.input(2))),
                                           {ops::cast(mask, DType::float32), x, Tensor::scalar(7.0)});
  EXPECT_EQ(float_bits(selected), float_bits(ops::where(mask, x, Tensor::scalar(7.0))));
}

TEST(FusedElementwise, MatchesTheDoubleReferenceOnManyBlocks) {
  ElementwiseBuilder b;
  Value x = b.input(0), y = b.input(1);
  ElementwiseProgram p = b.build(b.sigmoid(x * y) - b.square(b.tanh(y)) + b.relu(x - 0.25));
  std::vector<Tensor> inputs = {testing::uniform_tensor({70000}, 41), testing::uniform_tensor({70000}, 42)};
  std::vector<float> got = ops::fused_elementwise(p, inputs).to_vector<float>();
  std::vector<float> want = testing::interpret_in_double(p, inputs).to_vector<float>();
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-6) << i;
}

}  // namespace
}  // namespace kestrel
