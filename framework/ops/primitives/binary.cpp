// Binary elementwise primitives with NumPy broadcasting: arithmetic, comparisons and where. The
// math of each op with an opcode is its functor (kernels/elementwise_functors.h), shared with the
// fused kernel; here are the dtype rules and the gradients.
#include <cmath>
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
#include "framework/ops/promotion.h"
#include "framework/ops/reduce.h"

namespace kestrel {
namespace {

/// The gradient of a broadcast operand: sum the cotangent back down to the operand's shape.
Tensor unbroadcast(const Tensor& g, const Tensor& operand) {
  return g.shape() == operand.shape() ? g : ops::sum_to(g, operand.shape());
}

Tensor zero_of(const Tensor& like) { return ops::scalar_like(like, 0.0); }

using Opcode = ElementwiseOpcode;

// One struct per binary op: its opcode (the math), what dtypes it takes, and its gradient. pow
// has no opcode: it computes with std::pow, which has no vector form to share.
struct AddOp {
  static constexpr OpId kId = OpId::add;
  static constexpr Opcode kOpcode = Opcode::add;
  static constexpr bool kComparison = false, kFloatOnly = false, kTakesBool = false;
  static std::vector<Tensor> vjp(const VjpArgs& v) {
    return {v.wanted[0] ? unbroadcast(v.cotangent, v.primals[0]) : Tensor(),
            v.wanted[1] ? unbroadcast(v.cotangent, v.primals[1]) : Tensor()};
  }
};

struct SubtractOp {
  static constexpr OpId kId = OpId::subtract;
  static constexpr Opcode kOpcode = Opcode::subtract;
  static constexpr bool kComparison = false, kFloatOnly = false, kTakesBool = false;
  static std::vector<Tensor> vjp(const VjpArgs& v) {
    return {v.wanted[0] ? unbroadcast(v.cotangent, v.primals[0]) : Tensor(),
            v.wanted[1] ? unbroadcast(ops::negative(v.cotangent), v.primals[1]) : Tensor()};
  }
};

struct MultiplyOp {
  static constexpr OpId kId = OpId::multiply;
  static constexpr Opcode kOpcode = Opcode::multiply;
  static constexpr bool kComparison = false, kFloatOnly = false, kTakesBool = false;
  static std::vector<Tensor> vjp(const VjpArgs& v) {
    const Tensor &a = v.primals[0], &b = v.primals[1];
    return {v.wanted[0] ? unbroadcast(ops::multiply(v.cotangent, b), a) : Tensor(),
            v.wanted[1] ? unbroadcast(ops::multiply(v.cotangent, a), b) : Tensor()};
  }
};

struct DivideOp {
  static constexpr OpId kId = OpId::divide;
  static constexpr Opcode kOpcode = Opcode::divide;
  static constexpr bool kComparison = false, kFloatOnly = false, kTakesBool = false;
  // Integer division by zero would trap the process; report it instead.
  template <class T>
  static void check_integer_operands(T a, T b) {
    if (b == 0) throw ValueError(op_message("divide", "integer division by zero"));
  }
  static std::vector<Tensor> vjp(const VjpArgs& v) {
    const Tensor &a = v.primals[0], &b = v.primals[1];
    // d(a/b)/db = -a/b^2 = -out/b
    return {
        v.wanted[0] ? unbroadcast(ops::divide(v.cotangent, b), a) : Tensor(),
        v.wanted[1] ? unbroadcast(ops::negative(ops::divide(ops::multiply(v.cotangent, v.output), b)), b) : Tensor()};
  }
};

struct MaximumOp {
  static constexpr OpId kId = OpId::maximum;
  static constexpr Opcode kOpcode = Opcode::maximum;
  static constexpr bool kComparison = false, kFloatOnly = false, kTakesBool = false;
  static std::vector<Tensor> vjp(const VjpArgs& v) {
    // Ties send the gradient to a, matching the kernel's choice.
    Tensor a_wins = ops::greater_equal(v.primals[0], v.primals[1]);
    Tensor zero = zero_of(v.cotangent);
    return {v.wanted[0] ? unbroadcast(ops::where(a_wins, v.cotangent, zero), v.primals[0]) : Tensor(),
            v.wanted[1] ? unbroadcast(ops::where(a_wins, zero, v.cotangent), v.primals[1]) : Tensor()};
  }
};

struct MinimumOp {
  static constexpr OpId kId = OpId::minimum;
  static constexpr Opcode kOpcode = Opcode::minimum;
  static constexpr bool kComparison = false, kFloatOnly = false, kTakesBool = false;
  static std::vector<Tensor> vjp(const VjpArgs& v) {
    Tensor a_wins = ops::less_equal(v.primals[0], v.primals[1]);
    Tensor zero = zero_of(v.cotangent);
    return {v.wanted[0] ? unbroadcast(ops::where(a_wins, v.cotangent, zero), v.primals[0]) : Tensor(),
            v.wanted[1] ? unbroadcast(ops::where(a_wins, zero, v.cotangent), v.primals[1]) : Tensor()};
  }
};

struct PowOp {
  static constexpr OpId kId = OpId::pow;
  static constexpr bool kComparison = false, kFloatOnly = true, kTakesBool = false;
  template <class T>
  static T apply(T a, T b) {
    return std::pow(a, b);
  }
  static std::vector<Tensor> vjp(const VjpArgs& v) {
    const Tensor &a = v.primals[0], &b = v.primals[1];
    std::vector<Tensor> out(2);
    if (v.wanted[0]) {
      // d(a^b)/da = b * a^(b-1)
      Tensor da = ops::multiply(b, ops::pow(a, ops::subtract(b, ops::scalar_like(b, 1.0))));
      out[0] = unbroadcast(ops::multiply(v.cotangent, da), a);
    }
    if (v.wanted[1]) {
      // d(a^b)/db = a^b * log(a), taken as 0 where a <= 0 (log undefined), as TF does.
      Tensor positive = ops::greater(a, zero_of(a));
      Tensor safe_a = ops::where(positive, a, ops::scalar_like(a, 1.0));
      Tensor db = ops::where(positive, ops::multiply(v.output, ops::log(safe_a)), zero_of(v.output));
      out[1] = unbroadcast(ops::multiply(v.cotangent, db), b);
    }
    return out;
  }
};

template <Opcode kOpcodeOfOp, bool kOrdered>
struct ComparisonOp {
  static constexpr Opcode kOpcode = kOpcodeOfOp;
  static constexpr OpId kId = *opcode_op(kOpcodeOfOp);
  static constexpr bool kComparison = true, kFloatOnly = false, kTakesBool = !kOrdered;
  static std::vector<Tensor> vjp(const VjpArgs& v) { return {Tensor(), Tensor()}; }  // bool output: no gradient
};
using EqualOp = ComparisonOp<Opcode::equal, false>;
using NotEqualOp = ComparisonOp<Opcode::not_equal, false>;
using LessOp = ComparisonOp<Opcode::less, true>;
using LessEqualOp = ComparisonOp<Opcode::less_equal, true>;
using GreaterOp = ComparisonOp<Opcode::greater, true>;
using GreaterEqualOp = ComparisonOp<Opcode::greater_equal, true>;

template <class Op>
constexpr bool kHasOpcode = requires {
  Op::kOpcode;
};

template <class Op>
constexpr bool opcode_computes_op() {
  if constexpr (kHasOpcode<Op>) {
    return opcode_op(Op::kOpcode) == Op::kId;
  } else {
    return true;
  }
}

template <class Op>
class Binary final : public PrimitiveOf<Binary<Op>, Op::kId> {
  static_assert(opcode_computes_op<Op>(), "the opcode computes another op (KESTREL_ELEMENTWISE_OPCODES)");

 public:
  auto fields() const { return std::tuple<>(); }

  TensorSpec infer(std::span<const TensorSpec> in) const override {
    const std::string name(op_name(Op::kId));
    if (in[0].dtype != in[1].dtype) {
      throw TypeError(op_message(name, "a is " + in[0].to_string() + ", b is " + in[1].to_string() +
                                           ": dtypes differ; cast one side with ops::cast"));
    }
    DType dtype = in[0].dtype;
    if ((Op::kFloatOnly && !is_floating(dtype)) || (dtype == DType::bool_ && !Op::kTakesBool)) {
      throw TypeError(op_message(name, "does not take " + std::string(to_string(dtype)) + " operands (a is " +
                                           in[0].to_string() + "); cast them to " +
                                           (Op::kFloatOnly ? "float32" : "int32 or float32") + " first"));
    }
    Shape shape = broadcast_shapes(in[0].shape, in[1].shape, name.c_str());
    return {shape, Op::kComparison ? DType::bool_ : dtype};
  }

  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    switch (in[0].dtype) {
      case DType::float32: return run<float>(in, out);
      case DType::int32: return run<std::int32_t>(in, out);
      case DType::int64: return run<std::int64_t>(in, out);
      case DType::bool_:
        if constexpr (Op::kTakesBool) return run<bool>(in, out);
        break;
      case DType::bfloat16:
        if constexpr (kHasOpcode<Op>) return kernels::cpu().elementwise_bfloat16(Op::kOpcode, in, out);
        break;  // pow: widened to float32 by the dispatcher
    }
    KESTREL_DCHECK(false);
  }

  bool handles_bfloat16() const override { return kHasOpcode<Op>; }

  std::optional<ElementwiseOpcode> fusion_opcode() const override {
    if constexpr (kHasOpcode<Op>) {
      return Op::kOpcode;
    } else {
      return std::nullopt;  // pow
    }
  }

  std::vector<Tensor> vjp(const VjpArgs& args) const override { return Op::vjp(args); }

 private:
  template <class T>
  static void run(std::span<const TensorView> in, const TensorView& out) {
    using Out = std::conditional_t<Op::kComparison, bool, T>;
    if constexpr (Op::kFloatOnly && !std::is_floating_point_v<T>) {
      KESTREL_DCHECK(false);
    } else if constexpr (!kHasOpcode<Op>) {
      kernels::binary_loop<T, Out>(in[0], in[1], out, [](T a, T b) { return Op::apply(a, b); });
    } else if constexpr (std::is_same_v<T, float>) {
      kernels::cpu().elementwise_float32(Op::kOpcode, in, out);
    } else {
      kernels::binary_loop<T, Out>(in[0], in[1], out, [](T a, T b) {
        // divide rejects an integer divisor of 0 before the functor divides by it.
        if constexpr (requires { Op::check_integer_operands(a, b); }) Op::check_integer_operands(a, b);
        return static_cast<Out>(kernels::ElementwiseFn<Op::kOpcode>{}(a, b));
      });
    }
  }
};

template <class Op>
Tensor binary(const Tensor& a, const Tensor& b) {
  auto [x, y] = detail::promote_pair(op_name(Op::kId), a, b);
  return detail::apply_new<Binary<Op>>({x, y});
}

class Where final : public PrimitiveOf<Where, OpId::where> {
  static_assert(opcode_op(Opcode::select) == OpId::where, "select computes where (KESTREL_ELEMENTWISE_OPCODES)");

 public:
  auto fields() const { return std::tuple<>(); }
  bool handles_bfloat16() const override { return true; }  // selection copies bits

  TensorSpec infer(std::span<const TensorSpec> in) const override {
    if (in[0].dtype != DType::bool_) {
      throw TypeError(op_message("where", "condition is " + in[0].to_string() +
                                              "; it must be bool (use a comparison, or ops::cast(c, DType::bool_))"));
    }
    if (in[1].dtype != in[2].dtype) {
      throw TypeError(op_message("where", "x is " + in[1].to_string() + ", y is " + in[2].to_string() +
                                              ": dtypes differ; cast one side with ops::cast"));
    }
    Shape shape = broadcast_shapes(broadcast_shapes(in[0].shape, in[1].shape, "where"), in[2].shape, "where");
    return {shape, in[1].dtype};
  }

  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    switch (out.dtype) {
      case DType::float32: return kernels::cpu().elementwise_float32(Opcode::select, in, out);
      case DType::bfloat16: return select<bfloat16>(in, out);
      case DType::int32: return select<std::int32_t>(in, out);
      case DType::int64: return select<std::int64_t>(in, out);
      case DType::bool_: return select<bool>(in, out);
    }
  }

  /// Fused programs carry the condition as 1 or 0, which select reads as where does its bool.
  std::optional<ElementwiseOpcode> fusion_opcode() const override { return Opcode::select; }

  std::vector<Tensor> vjp(const VjpArgs& v) const override {
    const Tensor& c = v.primals[0];
    Tensor zero = zero_of(v.cotangent);
    return {Tensor(), v.wanted[1] ? unbroadcast(ops::where(c, v.cotangent, zero), v.primals[1]) : Tensor(),
            v.wanted[2] ? unbroadcast(ops::where(c, zero, v.cotangent), v.primals[2]) : Tensor()};
  }

 private:
  template <class T>
  static void select(std::span<const TensorView> in, const TensorView& out) {
    kernels::select_loop<T>(in[0], in[1], in[2], out, kernels::ElementwiseFn<Opcode::select>{});
  }
};

}  // namespace

namespace ops {

Tensor add(const Tensor& a, const Tensor& b) { return binary<AddOp>(a, b); }
Tensor subtract(const Tensor& a, const Tensor& b) { return binary<SubtractOp>(a, b); }
Tensor multiply(const Tensor& a, const Tensor& b) { return binary<MultiplyOp>(a, b); }
Tensor divide(const Tensor& a, const Tensor& b) { return binary<DivideOp>(a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary<MaximumOp>(a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary<MinimumOp>(a, b); }
Tensor pow(const Tensor& a, const Tensor& b) { return binary<PowOp>(a, b); }
Tensor equal(const Tensor& a, const Tensor& b) { return binary<EqualOp>(a, b); }
Tensor not_equal(const Tensor& a, const Tensor& b) { return binary<NotEqualOp>(a, b); }
Tensor less(const Tensor& a, const Tensor& b) { return binary<LessOp>(a, b); }
Tensor less_equal(const Tensor& a, const Tensor& b) { return binary<LessEqualOp>(a, b); }
Tensor greater(const Tensor& a, const Tensor& b) { return binary<GreaterOp>(a, b); }
Tensor greater_equal(const Tensor& a, const Tensor& b) { return binary<GreaterEqualOp>(a, b); }

Tensor where(const Tensor& condition, const Tensor& x, const Tensor& y) {
  if (!condition.defined()) throw ValueError(op_message("where", "condition is an undefined tensor"));
  auto [xx, yy] = detail::promote_pair("where", x, y);
  return detail::apply_new<Where>({condition, xx, yy});
}

Tensor square(const Tensor& x) { return multiply(x, x); }
Tensor scalar_like(const Tensor& like, double value) { return Tensor::scalar(value, like.dtype()); }
Tensor full_like(const Tensor& x, double value) { return Tensor::full(x.shape(), value, x.dtype()); }
Tensor zeros_like(const Tensor& x) { return full_like(x, 0.0); }
Tensor ones_like(const Tensor& x) { return full_like(x, 1.0); }

}  // namespace ops

Tensor operator+(const Tensor& a, const Tensor& b) { return ops::add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return ops::subtract(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return ops::multiply(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return ops::divide(a, b); }
Tensor operator-(const Tensor& x) { return ops::negative(x); }
Tensor operator+(const Tensor& a, double b) { return ops::add(a, ops::scalar_like(a, b)); }
Tensor operator-(const Tensor& a, double b) { return ops::subtract(a, ops::scalar_like(a, b)); }
Tensor operator*(const Tensor& a, double b) { return ops::multiply(a, ops::scalar_like(a, b)); }
Tensor operator/(const Tensor& a, double b) { return ops::divide(a, ops::scalar_like(a, b)); }
Tensor operator+(double a, const Tensor& b) { return ops::add(ops::scalar_like(b, a), b); }
Tensor operator-(double a, const Tensor& b) { return ops::subtract(ops::scalar_like(b, a), b); }
Tensor operator*(double a, const Tensor& b) { return ops::multiply(ops::scalar_like(b, a), b); }
Tensor operator/(double a, const Tensor& b) { return ops::divide(ops::scalar_like(b, a), b); }

}  // namespace kestrel
