// Test support: an ElementwiseProgram interpreted naively, one element at a time, in double.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

#include "framework/core/tensor.h"
#include "framework/ops/fused_elementwise.h"

namespace kestrel::testing {

/// program(inputs) in double precision. The output has the shape of the first input of the
/// highest rank; rank-0 inputs and suffixes of that shape repeat over it.
inline Tensor interpret_in_double(const ElementwiseProgram& program, const std::vector<Tensor>& inputs) {
  Shape shape;
  for (const Tensor& t : inputs) {
    if (t.rank() > shape.rank()) shape = t.shape();
  }
  std::vector<std::vector<double>> values;
  for (const Tensor& t : inputs) values.push_back(t.to_vector<double>());
  const auto n = static_cast<std::size_t>(shape.numel());
  std::vector<double> out(n);
  const auto& code = program.instructions();
  std::vector<double> reg(code.size());
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t r = 0; r < code.size(); ++r) {
      const ElementwiseInstruction& in = code[r];
      auto arg = [&](int k) { return reg[static_cast<std::size_t>(in.args[static_cast<std::size_t>(k)])]; };
      double a = opcode_arity(in.opcode) > 0 ? arg(0) : 0.0;
      double b = opcode_arity(in.opcode) > 1 ? arg(1) : 0.0;
      double& y = reg[r];
      switch (in.opcode) {
        case ElementwiseOpcode::input: {
          // A suffix of the output's shape repeats every v.size() elements (a scalar every one).
          const auto& v = values[static_cast<std::size_t>(in.args[0])];
          y = v[i % v.size()];
          break;
        }
        case ElementwiseOpcode::constant: y = in.value; break;
        case ElementwiseOpcode::negative: y = -a; break;
        case ElementwiseOpcode::abs: y = std::fabs(a); break;
        case ElementwiseOpcode::square: y = a * a; break;
        case ElementwiseOpcode::sqrt: y = std::sqrt(a); break;
        case ElementwiseOpcode::rsqrt: y = 1.0 / std::sqrt(a); break;
        case ElementwiseOpcode::exp: y = std::exp(a); break;
        case ElementwiseOpcode::log: y = std::log(a); break;
        case ElementwiseOpcode::tanh: y = std::tanh(a); break;
        case ElementwiseOpcode::sigmoid: y = 1.0 / (1.0 + std::exp(-a)); break;
        case ElementwiseOpcode::relu: y = a > 0.0 ? a : 0.0; break;
        case ElementwiseOpcode::erf: y = std::erf(a); break;
        case ElementwiseOpcode::gelu: y = 0.5 * a * (1.0 + std::erf(a / std::sqrt(2.0))); break;
        case ElementwiseOpcode::gelu_tanh:
          y = 0.5 * a * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (a + 0.044715 * a * a * a)));
          break;
        case ElementwiseOpcode::gelu_backprop: {
          const double pdf = std::exp(-0.5 * a * a) / std::sqrt(2.0 * std::numbers::pi);
          y = b * (0.5 * (1.0 + std::erf(a / std::sqrt(2.0))) + a * pdf);
          break;
        }
        case ElementwiseOpcode::gelu_tanh_backprop: {
          const double s = std::sqrt(2.0 / std::numbers::pi), k = 0.044715;
          const double t = std::tanh(s * (a + k * a * a * a));
          y = b * (0.5 * (1.0 + t) + 0.5 * a * (1.0 - t * t) * s * (1.0 + 3.0 * k * a * a));
          break;
        }
        case ElementwiseOpcode::round_bfloat16: y = static_cast<float>(bfloat16(static_cast<float>(a))); break;
        case ElementwiseOpcode::add: y = a + b; break;
        case ElementwiseOpcode::subtract: y = a - b; break;
        case ElementwiseOpcode::multiply: y = a * b; break;
        case ElementwiseOpcode::divide: y = a / b; break;
        case ElementwiseOpcode::maximum: y = a >= b ? a : b; break;
        case ElementwiseOpcode::minimum: y = a <= b ? a : b; break;
        case ElementwiseOpcode::greater: y = a > b; break;
        case ElementwiseOpcode::greater_equal: y = a >= b; break;
        case ElementwiseOpcode::less: y = a < b; break;
        case ElementwiseOpcode::less_equal: y = a <= b; break;
        case ElementwiseOpcode::equal: y = a == b; break;
        case ElementwiseOpcode::not_equal: y = a != b; break;
        case ElementwiseOpcode::select: y = a != 0.0 ? b : arg(2); break;
        default:
          // A new opcode needs a line here only once a program of these tests uses it: its op's
          // math is checked by the op table, and its instruction against the op by
          // fusion_coverage_test.cpp.
          throw std::logic_error("interpret_in_double: no reference for " + std::string(opcode_name(in.opcode)));
      }
    }
    out[i] = reg[static_cast<std::size_t>(program.result())];
  }
  return Tensor::from_vector(std::vector<float>(out.begin(), out.end()), shape);
}

/// A float32 tensor's values as raw bits, so tests compare results exactly (NaNs and signed zeros too).
inline std::vector<std::uint32_t> float_bits(const Tensor& t) {
  std::vector<std::uint32_t> out;
  for (float f : t.to_vector<float>()) out.push_back(std::bit_cast<std::uint32_t>(f));
  return out;
}

}  // namespace kestrel::testing
