// gelu and gelu_backprop, its gradient in x. The gradient is one op rather than the dozen its
// formula takes as ops: one pass over memory, and in bfloat16 one rounding (of the result only)
// instead of one per op and per constant. Both ops' math is their opcodes' functors
// (kernels/elementwise_functors.h), shared with the fused kernel.
#include <cmath>
#include <numbers>
#include <optional>
#include <string>
#include <tuple>

#include "framework/core/error.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/kernels/cpu_kernels.h"
#include "framework/ops/kernels/elementwise_functors.h"

namespace kestrel {
namespace {

using Opcode = ElementwiseOpcode;
using GeluTanh = kernels::ElementwiseFn<Opcode::gelu_tanh>;

std::string approximate_text(bool approximate) { return approximate ? "approximate=true" : "approximate=false"; }

// Both ops compute in float32 or bfloat16 through their opcode's kernel.
void run_opcode(Opcode opcode, std::span<const TensorView> in, const TensorView& out) {
  if (out.dtype == DType::bfloat16) {
    kernels::cpu().elementwise_bfloat16(opcode, in, out);
  } else {
    kernels::cpu().elementwise_float32(opcode, in, out);
  }
}

class Gelu final : public PrimitiveOf<Gelu, OpId::gelu> {
 public:
  explicit Gelu(bool approximate) : approximate_(approximate) {}
  auto fields() const { return std::tie(approximate_); }
  std::string params() const override { return approximate_text(approximate_); }

  TensorSpec infer(std::span<const TensorSpec> in) const override {
    if (!is_floating(in[0].dtype)) {
      throw TypeError(op_message("gelu", "x is " + in[0].to_string() + "; it must be float32 or bfloat16"));
    }
    return in[0];
  }

  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    run_opcode(fusion_opcode().value(), in, out);
  }
  bool handles_bfloat16() const override { return true; }
  std::optional<ElementwiseOpcode> fusion_opcode() const override {
    return approximate_ ? Opcode::gelu_tanh : Opcode::gelu;
  }

  // The cotangent in x's dtype, as a gradient is its primal's.
  std::vector<Tensor> vjp(const VjpArgs& v) const override {
    if (!v.wanted[0]) return {Tensor()};
    const Tensor& x = v.primals[0];
    return {ops::gelu_backprop(x, ops::cast(v.cotangent, x.dtype()), {.approximate = approximate_})};
  }

 private:
  bool approximate_;
};

// Inputs (x, dy) -> dy * gelu'(x).
class GeluBackprop final : public PrimitiveOf<GeluBackprop, OpId::gelu_backprop> {
 public:
  explicit GeluBackprop(bool approximate) : approximate_(approximate) {}
  auto fields() const { return std::tie(approximate_); }
  std::string params() const override { return approximate_text(approximate_); }

  TensorSpec infer(std::span<const TensorSpec> in) const override {
    const TensorSpec &x = in[0], &dy = in[1];
    if (!is_floating(x.dtype) || x.dtype != dy.dtype) {
      throw TypeError(op_message("gelu_backprop", "x is " + x.to_string() + " and dy is " + dy.to_string() +
                                                      "; both must be float32, or both bfloat16"));
    }
    if (x.shape != dy.shape) {
      throw ShapeError(op_message("gelu_backprop", "x is " + x.to_string() + " and dy is " + dy.to_string() +
                                                       "; dy must have x's shape (gelu's output gradient)"));
    }
    return x;
  }

  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    run_opcode(fusion_opcode().value(), in, out);
  }
  bool handles_bfloat16() const override { return true; }
  std::optional<ElementwiseOpcode> fusion_opcode() const override {
    return approximate_ ? Opcode::gelu_tanh_backprop : Opcode::gelu_backprop;
  }

  // Second order, written with ops: d/d(dy) is gelu'(x) again; d/dx is dy gelu''(x).
  std::vector<Tensor> vjp(const VjpArgs& v) const override {
    const Tensor &x = v.primals[0], &dy = v.primals[1], &g = v.cotangent;
    std::vector<Tensor> grads(2);
    if (v.wanted[1]) grads[1] = ops::gelu_backprop(x, g, {.approximate = approximate_});
    if (v.wanted[0]) grads[0] = g * dy * second_derivative(x);
    return grads;
  }

 private:
  // 0 from kernels::kGeluSaturated on, where the first derivative is a constant 1 or 0 (and the
  // formulas could overflow into 0 * inf); a NaN x takes the formula and stays a NaN.
  Tensor second_derivative(const Tensor& x) const {
    auto c = [&](double value) { return ops::scalar_like(x, value); };
    const Tensor x2 = ops::square(x);
    Tensor curvature;
    if (!approximate_) {
      // (Phi(x) + x phi(x))' = phi(x) (2 - x^2)
      const Tensor pdf = c(1.0 / std::sqrt(2.0 * std::numbers::pi)) * ops::exp(c(-0.5) * x2);
      curvature = pdf * (c(2.0) - x2);
    } else {
      // With u = s (x + k x^3), t = tanh(u), du = s (1 + 3 k x^2):
      // (0.5 (1 + t) + 0.5 x (1 - t^2) du)' = (1 - t^2) (du - x t du^2 + 3 s k x^2)
      const double s = GeluTanh::kScale, k = GeluTanh::kCubic;
      const Tensor t = ops::tanh(c(s) * (x + c(k) * x2 * x));
      const Tensor du = c(s) * (c(1.0) + c(3.0 * k) * x2);
      curvature = (c(1.0) - ops::square(t)) * (du - x * t * ops::square(du) + c(3.0 * s * k) * x2);
    }
    return ops::where(ops::greater_equal(ops::abs(x), c(kernels::kGeluSaturated)), c(0.0), curvature);
  }

  bool approximate_;
};

}  // namespace

namespace ops {

Tensor gelu(const Tensor& x, GeluOptions options) { return detail::apply_new<Gelu>({x}, options.approximate); }

Tensor gelu_backprop(const Tensor& x, const Tensor& dy, GeluOptions options) {
  return detail::apply_new<GeluBackprop>({x, dy}, options.approximate);
}

}  // namespace ops
}  // namespace kestrel
