// Op table entries for fused_elementwise: programs against a naive double-precision interpreter.
// The builder, the text form, equality, errors and bitwise agreement with the standalone ops are
// in fused_elementwise_test.cpp.
#include <cmath>
#include <vector>

#include "framework/ops/fused_elementwise.h"
#include "tests/framework/ops/fused_elementwise_reference.h"
#include "tests/framework/ops/op_case.h"

namespace kestrel::testing {
namespace {

using Value = ElementwiseBuilder::Value;

OpCase fused_case(std::string label, ElementwiseProgram program, std::function<Inputs()> make_inputs) {
  OpCase c;
  c.op = OpId::fused_elementwise;
  c.label = std::move(label);
  c.make_inputs = std::move(make_inputs);
  c.run = [program](const Inputs& x) { return ops::fused_elementwise(program, x); };
  c.reference = [program](const Inputs& x) { return interpret_in_double(program, x); };
  c.no_gradient_because = "not differentiable: fused programs run after autodiff (optimizer updates, jit fusion)";
  return c;
}

ElementwiseProgram adam_step() {
  ElementwiseBuilder b;
  Value var = b.input(0), m = b.input(1), v = b.input(2), alpha = b.input(3);
  return b.build(var - m * alpha / (b.sqrt(v) + 1e-3));
}

// Every unary instruction, the comparisons and select, over values where each is defined.
ElementwiseProgram every_instruction() {
  ElementwiseBuilder b;
  Value x = b.input(0), y = b.input(1), s = b.input(2);
  Value positive = b.abs(y) + 0.5;
  Value smooth = b.exp(x) + b.log(positive) + b.tanh(x) * b.sigmoid(-x) + b.rsqrt(positive) * b.erf(y);
  Value clipped = b.minimum(b.maximum(smooth, x * s), 2.0 - b.relu(y));
  Value mask = b.greater(x, y) + b.less_equal(x, s) * b.equal(y, y) + b.greater_equal(x, b.constant(0.25)) -
               b.less(y, b.constant(-0.75)) * b.not_equal(x, s);
  return b.build(b.select(mask, clipped / b.square(positive), b.negative(smooth)));
}

ElementwiseProgram scalars_only() {
  ElementwiseBuilder b;
  Value a = b.input(0), c = b.input(1);
  return b.build(b.sqrt(1.0 - a) / (1.0 - c));
}

// A Dense layer's epilogue: the bias is a suffix of the output, repeated over its rows.
ElementwiseProgram bias_relu() {
  ElementwiseBuilder b;
  return b.build(b.relu(b.input(0) + b.input(1)));
}

// Suffixes of every length against [B, L, N], the widest input last.
ElementwiseProgram suffixes() {
  ElementwiseBuilder b;
  Value n = b.input(0), ln = b.input(1), s = b.input(2), x = b.input(3);
  return b.build(b.tanh(x * ln + n) - s * b.sigmoid(x - n) + b.gelu(x + n) * b.gelu_tanh(x * ln));
}

std::vector<OpCase> fused_elementwise_cases() {
  std::vector<OpCase> cases;
  cases.push_back(fused_case("fused_elementwise_adam_step", adam_step(), [] {
    return Inputs{uniform_tensor({3, 5}, 71), uniform_tensor({3, 5}, 72), uniform_tensor({3, 5}, 73, 0.0, 2.0),
                  Tensor::scalar(0.01)};
  }));
  // 1283 elements: two full blocks of the kernel and a short tail.
  cases.push_back(fused_case("fused_elementwise_every_instruction", every_instruction(), [] {
    return Inputs{uniform_tensor({1283}, 74), uniform_tensor({1283}, 75), Tensor::scalar(0.5)};
  }));
  cases.push_back(fused_case("fused_elementwise_scalars_only", scalars_only(), [] {
    return Inputs{Tensor::scalar(0.729), Tensor::scalar(0.9)};
  }));
  // Rows of 37: shorter than a block, so blocks start anywhere inside a row.
  cases.push_back(fused_case("fused_elementwise_suffix_bias_relu", bias_relu(), [] {
    return Inputs{uniform_tensor({40, 37}, 76), uniform_tensor({37}, 77)};
  }));
  // [N] = 9 is short; [L, N] = 630 is longer than a block, so blocks follow its rows.
  cases.push_back(fused_case("fused_elementwise_suffix_short_and_long_rows", suffixes(), [] {
    return Inputs{uniform_tensor({9}, 78), uniform_tensor({70, 9}, 79), Tensor::scalar(0.25),
                  uniform_tensor({3, 70, 9}, 80)};
  }));
  // Both suffixes longer than a block: rows of 600 inside rows of 1800.
  cases.push_back(fused_case("fused_elementwise_suffix_long_rows", suffixes(), [] {
    return Inputs{uniform_tensor({600}, 81), uniform_tensor({3, 600}, 82), Tensor::scalar(-0.5),
                  uniform_tensor({2, 3, 600}, 83)};
  }));
  return cases;
}

KESTREL_REGISTER_OP_CASES(fused_elementwise_cases);

}  // namespace
}  // namespace kestrel::testing
