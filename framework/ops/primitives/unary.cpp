// Unary elementwise primitives: math functions and activations, plus negative and abs for
// integers (gelu has its own file, with its gradient's op). Their math is the opcode's functor
// (kernels/elementwise_functors.h), shared with the fused kernel; here are the dtype rules and
// the gradients.
#include <cmath>
#include <numbers>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>

#include "framework/core/error.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/kernels/cpu_kernels.h"
#include "framework/ops/kernels/elementwise_functors.h"
#include "framework/ops/kernels/elementwise_loops.h"

namespace kestrel {
namespace {

using Opcode = ElementwiseOpcode;

// One struct per unary op: its opcode (the math), whether it takes integers, and its gradient
// written with public ops.
struct NegativeOp {
  static constexpr OpId kId = OpId::negative;
  static constexpr Opcode kOpcode = Opcode::negative;
  static constexpr bool kTakesIntegers = true;
  static Tensor vjp(const Tensor& x, const Tensor& y, const Tensor& g) { return ops::negative(g); }
};

struct AbsOp {
  static constexpr OpId kId = OpId::abs;
  static constexpr Opcode kOpcode = Opcode::abs;
  static constexpr bool kTakesIntegers = true;
  static Tensor vjp(const Tensor& x, const Tensor& y, const Tensor& g) {
    // sign(x) * g, with sign(0) = 0 as in TF.
    Tensor zero = ops::scalar_like(x, 0.0);
    return ops::where(ops::greater(x, zero), g,
                      ops::where(ops::less(x, zero), ops::negative(g), ops::scalar_like(g, 0.0)));
  }
};

struct ExpOp {
  static constexpr OpId kId = OpId::exp;
  static constexpr Opcode kOpcode = Opcode::exp;
  static constexpr bool kTakesIntegers = false;
  static Tensor vjp(const Tensor& x, const Tensor& y, const Tensor& g) { return ops::multiply(g, y); }
};

struct LogOp {
  static constexpr OpId kId = OpId::log;
  static constexpr Opcode kOpcode = Opcode::log;
  static constexpr bool kTakesIntegers = false;
  static Tensor vjp(const Tensor& x, const Tensor& y, const Tensor& g) { return ops::divide(g, x); }
};

struct TanhOp {
  static constexpr OpId kId = OpId::tanh;
  static constexpr Opcode kOpcode = Opcode::tanh;
  static constexpr bool kTakesIntegers = false;
  static Tensor vjp(const Tensor& x, const Tensor& y, const Tensor& g) {
    return ops::multiply(g, ops::subtract(ops::scalar_like(y, 1.0), ops::square(y)));
  }
};

struct SqrtOp {
  static constexpr OpId kId = OpId::sqrt;
  static constexpr Opcode kOpcode = Opcode::sqrt;
  static constexpr bool kTakesIntegers = false;
  static Tensor vjp(const Tensor& x, const Tensor& y, const Tensor& g) {
    return ops::divide(ops::multiply(g, ops::scalar_like(g, 0.5)), y);
  }
};

struct RsqrtOp {
  static constexpr OpId kId = OpId::rsqrt;
  static constexpr Opcode kOpcode = Opcode::rsqrt;
  static constexpr bool kTakesIntegers = false;
  static Tensor vjp(const Tensor& x, const Tensor& y, const Tensor& g) {
    // d(x^-1/2)/dx = -1/2 x^-3/2 = -1/2 y^3
    return ops::multiply(g, ops::multiply(ops::scalar_like(y, -0.5), ops::multiply(y, ops::square(y))));
  }
};

struct ErfOp {
  static constexpr OpId kId = OpId::erf;
  static constexpr Opcode kOpcode = Opcode::erf;
  static constexpr bool kTakesIntegers = false;
  static Tensor vjp(const Tensor& x, const Tensor& y, const Tensor& g) {
    // d erf(x)/dx = 2/sqrt(pi) exp(-x^2)
    Tensor slope =
        ops::multiply(ops::scalar_like(x, 2.0 / std::sqrt(std::numbers::pi)), ops::exp(ops::negative(ops::square(x))));
    return ops::multiply(g, slope);
  }
};

struct SigmoidOp {
  static constexpr OpId kId = OpId::sigmoid;
  static constexpr Opcode kOpcode = Opcode::sigmoid;
  static constexpr bool kTakesIntegers = false;
  static Tensor vjp(const Tensor& x, const Tensor& y, const Tensor& g) {
    return ops::multiply(g, ops::multiply(y, ops::subtract(ops::scalar_like(y, 1.0), y)));
  }
};

struct ReluOp {
  static constexpr OpId kId = OpId::relu;
  static constexpr Opcode kOpcode = Opcode::relu;
  static constexpr bool kTakesIntegers = false;
  // From the output (y > 0 exactly where x > 0), not the input: in a compiled step the input is
  // then dead once relu has run, so bias + relu can fuse into one op without keeping x alive.
  static Tensor vjp(const Tensor& x, const Tensor& y, const Tensor& g) {
    return ops::where(ops::greater(y, ops::scalar_like(y, 0.0)), g, ops::scalar_like(g, 0.0));
  }
};

template <class Op>
class Unary final : public PrimitiveOf<Unary<Op>, Op::kId> {
  static_assert(opcode_op(Op::kOpcode) == Op::kId, "the opcode computes another op (KESTREL_ELEMENTWISE_OPCODES)");

 public:
  auto fields() const { return std::tuple<>(); }

  TensorSpec infer(std::span<const TensorSpec> in) const override {
    bool ok = is_floating(in[0].dtype) || (Op::kTakesIntegers && is_integer(in[0].dtype));
    if (!ok) {
      throw TypeError(op_message(op_name(Op::kId), "x is " + in[0].to_string() + "; it must be " +
                                                       (Op::kTakesIntegers ? "numeric" : "float32 or bfloat16") +
                                                       " (cast it with ops::cast first)"));
    }
    return in[0];
  }

  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    switch (in[0].dtype) {
      case DType::float32: return kernels::cpu().elementwise_float32(Op::kOpcode, in, out);
      case DType::bfloat16: return kernels::cpu().elementwise_bfloat16(Op::kOpcode, in, out);
      case DType::int32: return run_int<std::int32_t>(in[0], out);
      case DType::int64: return run_int<std::int64_t>(in[0], out);
      case DType::bool_:  // rejected by infer
        KESTREL_DCHECK(false);
        return;
    }
  }

  bool handles_bfloat16() const override { return true; }

  std::optional<ElementwiseOpcode> fusion_opcode() const override { return Op::kOpcode; }

  std::vector<Tensor> vjp(const VjpArgs& v) const override {
    if (!v.wanted[0]) return {Tensor()};
    return {Op::vjp(v.primals[0], v.output, v.cotangent)};
  }

 private:
  template <class T>
  static void run_int(const TensorView& in, const TensorView& out) {
    if constexpr (Op::kTakesIntegers) {
      kernels::unary_loop<T, T>(in, out, kernels::ElementwiseFn<Op::kOpcode>{});
    } else {
      KESTREL_DCHECK(false);
    }
  }
};

class Cast final : public PrimitiveOf<Cast, OpId::cast> {
 public:
  explicit Cast(DType dtype) : dtype_(dtype) {}
  auto fields() const { return std::tie(dtype_); }
  std::string params() const override { return "dtype=" + std::string(to_string(dtype_)); }
  bool handles_bfloat16() const override { return true; }

  TensorSpec infer(std::span<const TensorSpec> in) const override { return {in[0].shape, dtype_}; }

  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    kernels::cpu().convert(in[0], out);
  }

  std::vector<Tensor> vjp(const VjpArgs& v) const override {
    // Gradients flow between float types only; an integer side has none.
    if (!v.wanted[0] || !is_floating(v.primals[0].dtype()) || !is_floating(dtype_)) return {Tensor()};
    return {ops::cast(v.cotangent, v.primals[0].dtype())};
  }

 private:
  DType dtype_;
};

template <class Op>
Tensor unary(const Tensor& x) {
  return detail::apply_new<Unary<Op>>({x});
}

}  // namespace

namespace ops {

Tensor negative(const Tensor& x) { return unary<NegativeOp>(x); }
Tensor abs(const Tensor& x) { return unary<AbsOp>(x); }
Tensor exp(const Tensor& x) { return unary<ExpOp>(x); }
Tensor log(const Tensor& x) { return unary<LogOp>(x); }
Tensor tanh(const Tensor& x) { return unary<TanhOp>(x); }
Tensor sqrt(const Tensor& x) { return unary<SqrtOp>(x); }
Tensor rsqrt(const Tensor& x) { return unary<RsqrtOp>(x); }
Tensor erf(const Tensor& x) { return unary<ErfOp>(x); }
Tensor sigmoid(const Tensor& x) { return unary<SigmoidOp>(x); }
Tensor relu(const Tensor& x) { return unary<ReluOp>(x); }

Tensor cast(const Tensor& x, DType dtype) {
  if (x.defined() && x.dtype() == dtype) return x;
  return detail::apply_new<Cast>({x}, dtype);
}

}  // namespace ops
}  // namespace kestrel
