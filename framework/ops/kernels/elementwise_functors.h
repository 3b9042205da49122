// The math of each elementwise opcode, written once: the ops' own kernels and the fused-program
// kernel both call these functors, so a fused program gives the standalone ops' bits.
//
//   ElementwiseFn<ElementwiseOpcode::exp>{}(x)          // x an Eigen float array: Eigen's vector exp
//   ElementwiseFn<ElementwiseOpcode::add>{}(1.0f, 2.0f) // 3.0f
//   with_opcode(opcode, [&](auto op) { using Fn = ElementwiseFn<op.value>; ... });
//
// Unary functors take an Eigen float array and return an expression, so they run on Eigen's
// vector functions; negative and abs, which also take integers, take a scalar too, and
// round_bfloat16 takes only a scalar (the kernels loop over it). Binary ones
// and select take scalars: their loops vectorize as written, and a scalar a + b rounds as a
// vector one does. Comparisons return bool (fused programs store it as 1 or 0). gelu's two
// gradients are binary but take two Eigen arrays (x, dy), as they call vector functions.
//
// Adding a fusible op: its line in KESTREL_ELEMENTWISE_OPCODES (op_list.h, beside its own), its
// functor here, its primitive's kOpcode (which gives fusion_opcode()), and its op test case; the
// kernels and the jit need nothing more.
//
// Header-only and stateless, so that each CPU level's kernels (kernels/cpu/elementwise.cpp)
// compile it with their own flags.
#pragma once

#include <Eigen/Core>
#include <type_traits>
#include <unsupported/Eigen/SpecialFunctions>

#include "framework/core/dtype.h"
#include "framework/core/error.h"
#include "framework/ops/elementwise_opcode.h"

namespace kestrel::kernels {

/// The math of one opcode; defined for each computing opcode of KESTREL_ELEMENTWISE_OPCODES.
template <ElementwiseOpcode>
struct ElementwiseFn;

template <>
struct ElementwiseFn<ElementwiseOpcode::negative> {
  auto operator()(const auto& x) const { return -x; }  // an Eigen array or an integer
};

template <>
struct ElementwiseFn<ElementwiseOpcode::abs> {
  template <class T>
  requires std::is_integral_v<T> T operator()(T x) const { return x < 0 ? -x : x; }
  template <class D>
  auto operator()(const Eigen::ArrayBase<D>& x) const {
    return x.abs();
  }
};

template <>
struct ElementwiseFn<ElementwiseOpcode::square> {
  template <class D>
  auto operator()(const Eigen::ArrayBase<D>& x) const {
    return x * x;  // rounds as multiply(x, x) does
  }
};

// Under EIGEN_FAST_MATH (Eigen's default) the vector sqrt and rsqrt round differently from the
// scalar ones: what the standalone op computes is what Eigen's array code computes.
template <>
struct ElementwiseFn<ElementwiseOpcode::sqrt> {
  template <class D>
  auto operator()(const Eigen::ArrayBase<D>& x) const {
    return x.sqrt();
  }
};

template <>
struct ElementwiseFn<ElementwiseOpcode::rsqrt> {
  template <class D>
  auto operator()(const Eigen::ArrayBase<D>& x) const {
    return x.rsqrt();
  }
};

template <>
struct ElementwiseFn<ElementwiseOpcode::exp> {
  template <class D>
  auto operator()(const Eigen::ArrayBase<D>& x) const {
    return x.exp();
  }
};

template <>
struct ElementwiseFn<ElementwiseOpcode::log> {
  template <class D>
  auto operator()(const Eigen::ArrayBase<D>& x) const {
    return x.log();
  }
};

template <>
struct ElementwiseFn<ElementwiseOpcode::tanh> {
  template <class D>
  auto operator()(const Eigen::ArrayBase<D>& x) const {
    return x.tanh();
  }
};

template <>
struct ElementwiseFn<ElementwiseOpcode::sigmoid> {
  template <class D>
  auto operator()(const Eigen::ArrayBase<D>& x) const {
    return x.logistic();
  }
};

template <>
struct ElementwiseFn<ElementwiseOpcode::relu> {
  template <class D>
  auto operator()(const Eigen::ArrayBase<D>& x) const {
    return x.max(0.0f);
  }
};

template <>
struct ElementwiseFn<ElementwiseOpcode::erf> {
  template <class D>
  auto operator()(const Eigen::ArrayBase<D>& x) const {
    return x.erf();
  }
};

/// x * Phi(x) = x/2 (1 + erf(x / sqrt(2))).
template <>
struct ElementwiseFn<ElementwiseOpcode::gelu> {
  static constexpr float kSqrtHalf = 0.70710678118654752f;  // 1/sqrt(2)
  template <class D>
  auto operator()(const Eigen::ArrayBase<D>& x) const {
    return 0.5f * x * (1.0f + (x * kSqrtHalf).erf());
  }
};

/// x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), as ops::gelu with {.approximate = true}.
template <>
struct ElementwiseFn<ElementwiseOpcode::gelu_tanh> {
  static constexpr float kScale = 0.79788456080286536f;  // sqrt(2/pi)
  static constexpr float kCubic = 0.044715f;
  template <class D>
  auto operator()(const Eigen::ArrayBase<D>& x) const {
    return 0.5f * x * (1.0f + (kScale * (x + kCubic * x.cube())).tanh());
  }
};

/// From this |x| on, gelu's slope, either form, is 1 or 0 to float32's precision. Its gradients
/// see x clamped there, so that x^2 and x^3 stay finite: unclamped, a large |x| would overflow
/// them into 0 * inf. (Eigen's select, which could give exactly 1 and 0 past the bound, runs
/// element by element on this Eigen, scalar erf and exp included: 13x slower.) A NaN passes the
/// clamp, as std::max passes it, and stays a NaN.
inline constexpr float kGeluSaturated = 16.0f;

template <class X>
auto gelu_clamped(const Eigen::ArrayBase<X>& x) {
  return x.max(-kGeluSaturated).min(kGeluSaturated);
}

/// The tanh approximation's gradient at one element or one vector of them: with
/// u = s (x + k x^3), t = tanh(u) and du = s (1 + 3 k x^2), dy * (0.5 (1 + t) + 0.5 x (1 - t^2) du),
/// written as dy * 0.5 (1 + t) (1 + x (1 - t) du): 1 - t is exact where t nears 1, and 1 - t^2 is
/// not (its rounding would depend on whether the level contracts it into an FMA). t is computed
/// once: as an Eigen expression, which computed it twice, gelu_backprop {.approximate = true} of
/// [2048, 1024] took 2.6 ms against 1.1-1.3 ms (2 threads, AMD EPYC Zen 3, avx2). Eigen runs it a
/// vector at a time (its functor_traits below say so), and its tail with the same math on floats.
struct GeluTanhSlopeTimesDy {
  static constexpr float kScale = ElementwiseFn<ElementwiseOpcode::gelu_tanh>::kScale;
  static constexpr float kCubic = ElementwiseFn<ElementwiseOpcode::gelu_tanh>::kCubic;

  template <class P>
  static P apply(const P& x, const P& dy) {
    namespace ei = Eigen::internal;
    const auto c = [](float value) { return ei::pset1<P>(value); };
    const P x2 = ei::pmul(x, x);
    const P u = ei::pmul(c(kScale), ei::padd(x, ei::pmul(c(kCubic), ei::pmul(x, x2))));
    const P t = tanh(u);
    const P du = ei::pmul(c(kScale), ei::padd(c(1.0f), ei::pmul(c(3.0f * kCubic), x2)));
    const P half_one_plus_t = ei::pmul(c(0.5f), ei::padd(c(1.0f), t));
    const P tail = ei::padd(c(1.0f), ei::pmul(ei::pmul(x, ei::psub(c(1.0f), t)), du));
    return ei::pmul(dy, ei::pmul(half_one_plus_t, tail));
  }
  // Eigen's own tanh, as x.tanh() computes it: the same approximation for a vector and a float.
  template <class P>
  static P tanh(const P& u) {
    const Eigen::internal::scalar_tanh_op<float> op;
    if constexpr (std::is_same_v<P, float>) {
      return op(u);
    } else {
      return op.packetOp(u);
    }
  }

  float operator()(const float& x, const float& dy) const { return apply(x, dy); }
  template <class Packet>
  Packet packetOp(const Packet& x, const Packet& dy) const {  // NOLINT(readability-identifier-naming): Eigen's name
    return apply(x, dy);
  }
};

}  // namespace kestrel::kernels

namespace Eigen::internal {
// Lets Eigen run GeluTanhSlopeTimesDy a vector at a time.
// NOLINTBEGIN(readability-identifier-naming): the names Eigen reads
template <>
struct functor_traits<kestrel::kernels::GeluTanhSlopeTimesDy> {
  enum {
    Cost = functor_traits<scalar_tanh_op<float>>::Cost + 16 * NumTraits<float>::MulCost,  // apply's 16 others
    PacketAccess = packet_traits<float>::HasTanh
  };
};
// NOLINTEND(readability-identifier-naming)
}  // namespace Eigen::internal

namespace kestrel::kernels {

/// gelu's gradient in x: dy * (Phi(x) + x phi(x)), as one instruction. Composed of ops, it would
/// be a dozen passes, and in bfloat16 each would round (its constants too).
template <>
struct ElementwiseFn<ElementwiseOpcode::gelu_backprop> {
  static constexpr float kSqrtHalf = ElementwiseFn<ElementwiseOpcode::gelu>::kSqrtHalf;
  static constexpr float kInvSqrtTwoPi = 0.39894228040143268f;  // 1/sqrt(2 pi)
  template <class X, class Dy>
  auto operator()(const Eigen::ArrayBase<X>& x, const Eigen::ArrayBase<Dy>& dy) const {
    const auto xc = gelu_clamped(x);
    const auto cdf = 0.5f * (1.0f + (xc * kSqrtHalf).erf());
    const auto pdf = kInvSqrtTwoPi * (-0.5f * xc.square()).exp();
    return dy * (cdf + xc * pdf);
  }
};

/// gelu_tanh's gradient in x, x clamped as for the exact form.
template <>
struct ElementwiseFn<ElementwiseOpcode::gelu_tanh_backprop> {
  template <class X, class Dy>
  auto operator()(const Eigen::ArrayBase<X>& x, const Eigen::ArrayBase<Dy>& dy) const {
    return gelu_clamped(x).binaryExpr(dy.derived(), GeluTanhSlopeTimesDy{});
  }
};

/// To the nearest bfloat16, ties to even, as ops::cast rounds, and back to float32 (exactly): a
/// fused program computes a bfloat16 op's value in float32 and rounds it here, so it keeps the
/// bits the op would store. Integer bit arithmetic, which vectorizes as a plain loop; it has no
/// Eigen form, so the kernels run it element by element.
template <>
struct ElementwiseFn<ElementwiseOpcode::round_bfloat16> {
  float operator()(float x) const { return static_cast<float>(bfloat16(x)); }
};

template <>
struct ElementwiseFn<ElementwiseOpcode::add> {
  template <class T>
  T operator()(T a, T b) const {
    return a + b;
  }
};

template <>
struct ElementwiseFn<ElementwiseOpcode::subtract> {
  template <class T>
  T operator()(T a, T b) const {
    return a - b;
  }
};

template <>
struct ElementwiseFn<ElementwiseOpcode::multiply> {
  template <class T>
  T operator()(T a, T b) const {
    return a * b;
  }
};

/// True division for floats; integer division rounds toward zero (the primitive rejects b == 0).
template <>
struct ElementwiseFn<ElementwiseOpcode::divide> {
  template <class T>
  T operator()(T a, T b) const {
    return a / b;
  }
};

/// Ties pick a, where maximum's gradient goes; a NaN on either side picks b.
template <>
struct ElementwiseFn<ElementwiseOpcode::maximum> {
  template <class T>
  T operator()(T a, T b) const {
    return a >= b ? a : b;
  }
};

template <>
struct ElementwiseFn<ElementwiseOpcode::minimum> {
  template <class T>
  T operator()(T a, T b) const {
    return a <= b ? a : b;
  }
};

template <>
struct ElementwiseFn<ElementwiseOpcode::greater> {
  template <class T>
  bool operator()(T a, T b) const {
    return a > b;
  }
};

template <>
struct ElementwiseFn<ElementwiseOpcode::greater_equal> {
  template <class T>
  bool operator()(T a, T b) const {
    return a >= b;
  }
};

template <>
struct ElementwiseFn<ElementwiseOpcode::less> {
  template <class T>
  bool operator()(T a, T b) const {
    return a < b;
  }
};

template <>
struct ElementwiseFn<ElementwiseOpcode::less_equal> {
  template <class T>
  bool operator()(T a, T b) const {
    return a <= b;
  }
};

template <>
struct ElementwiseFn<ElementwiseOpcode::equal> {
  template <class T>
  bool operator()(T a, T b) const {
    return a == b;
  }
};

template <>
struct ElementwiseFn<ElementwiseOpcode::not_equal> {
  template <class T>
  bool operator()(T a, T b) const {
    return a != b;
  }
};

/// a where mask is nonzero (true, or a float other than +-0), else b.
template <>
struct ElementwiseFn<ElementwiseOpcode::select> {
  template <class Mask, class T>
  T operator()(Mask mask, T a, T b) const {
    return mask != Mask{} ? a : b;
  }
};

/// Calls fn(std::integral_constant<ElementwiseOpcode, opcode>{}), so that a kernel's switch over
/// opcodes is this one, expanded from the list. Only for computing opcodes: input and constant
/// have no math (fn is not called for them).
template <class Fn>
void with_opcode(ElementwiseOpcode opcode, Fn&& fn) {
  switch (opcode) {
#define KESTREL_OPCODE_CASE(name, arity, op, symbol) \
  case ElementwiseOpcode::name: return fn(std::integral_constant<ElementwiseOpcode, ElementwiseOpcode::name>{});
    KESTREL_ELEMENTWISE_OPCODES(KESTREL_OPCODE_CASE)
#undef KESTREL_OPCODE_CASE
    case ElementwiseOpcode::input:
    case ElementwiseOpcode::constant: KESTREL_DCHECK(false); return;
  }
}

}  // namespace kestrel::kernels
