// The elementwise opcodes' float32 kernels, for every CPU level: each op's own kernel over whole
// tensors, and one instruction of a fused program over a block (the plan and the blocks are
// framework/ops/kernels/fused_elementwise_kernel.cpp's). Both apply the opcode's functor
// (elementwise_functors.h), so a fused program rounds exactly as the ops it replaces, at each
// level. The one switch over opcodes is with_opcode's, expanded from KESTREL_ELEMENTWISE_OPCODES.
#include "framework/ops/kernels/cpu/level.h"

#include <Eigen/Core>

#include <algorithm>
#include <array>
#include <type_traits>

#include "framework/core/thread_pool.h"
#include "framework/ops/kernels/elementwise_functors.h"
#include "framework/ops/kernels/elementwise_loops.h"

namespace kestrel::kernels::KESTREL_CPU_LEVEL {
namespace {

using FloatArray = Eigen::Map<const Eigen::ArrayXf>;

template <ElementwiseOpcode kOpcode>
void unary_run(const float* x, float* y, std::int64_t n) {
  Eigen::Map<Eigen::ArrayXf>(y, n) = ElementwiseFn<kOpcode>{}(FloatArray(x, n));
}

/// A unary functor over a tensor, chunk by chunk over the thread pool.
template <ElementwiseOpcode kOpcode>
void unary_tensor(const TensorView& in, const TensorView& out) {
  const float* x = in.as<float>();
  float* y = out.as<float>();
  // Threads split on 16-element boundaries: Eigen computes whole packets with its vector
  // functions and only a tail with scalar ones, which round differently (sqrt under fast math).
  // Aligned splits leave one tail, at the end, so the bits do not depend on the thread count.
  constexpr std::int64_t kLanes = 16;
  const std::int64_t n = in.numel();
  parallel_for((n + kLanes - 1) / kLanes, kElementwiseGrain / kLanes, [&](std::int64_t first, std::int64_t last) {
    const std::int64_t lo = first * kLanes;
    const std::int64_t hi = std::min(last * kLanes, n);
    unary_run<kOpcode>(x + lo, y + lo, hi - lo);
  });
}

// An operand as a step's loop reads it: a pointer into the block, or one value for every element.
struct Vector {
  const float* data;
  float operator[](std::int64_t i) const { return data[i]; }
};
struct Uniform {
  float value;
  float operator[](std::int64_t) const { return value; }
};

template <class Fn>
void visit(const ElementwiseOperand& a, Fn&& fn) {
  if (a.data == nullptr) {
    fn(Uniform{a.value});
  } else {
    fn(Vector{a.data});
  }
}

// y[i] = fn(operands[i]...). y meets an operand at most at the same element (a step in place),
// never at an offset, so __restrict lets the loop vectorize without alias checks.
template <class Fn, class... Operands>
void loop(Fn fn, float* __restrict y, std::int64_t n, Operands... operands) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(fn(operands[i]...));
}

template <ElementwiseOpcode kOpcode>
void step(const std::array<ElementwiseOperand, 3>& args, float* y, std::int64_t n) {
  const ElementwiseFn<kOpcode> fn;
  if constexpr (opcode_arity(kOpcode) == 1) {
    if (args[0].data != nullptr) return unary_run<kOpcode>(args[0].data, y, n);
    // One value for the block: computed once, in a vector lane, so that it rounds as the op does
    // on a tensor (vector rsqrt or exp differ from scalar).
    alignas(64) std::array<float, 16> lanes;
    lanes.fill(args[0].value);
    unary_run<kOpcode>(lanes.data(), lanes.data(), static_cast<std::int64_t>(lanes.size()));
    std::fill(y, y + n, lanes[0]);
  } else if constexpr (opcode_arity(kOpcode) == 2) {
    visit(args[0], [&](auto a) { visit(args[1], [&](auto b) { loop(fn, y, n, a, b); }); });
  } else {
    visit(args[0], [&](auto mask) {
      visit(args[1], [&](auto a) { visit(args[2], [&](auto b) { loop(fn, y, n, mask, a, b); }); });
    });
  }
}

}  // namespace

void elementwise_float32(ElementwiseOpcode opcode, std::span<const TensorView> in, const TensorView& out) {
  with_opcode(opcode, [&](auto op) {
    using Fn = ElementwiseFn<op.value>;
    if constexpr (opcode_arity(op.value) == 1) {
      unary_tensor<op.value>(in[0], out);
    } else if constexpr (opcode_arity(op.value) == 2) {
      using Out = std::invoke_result_t<Fn, float, float>;  // bool for comparisons
      binary_loop<float, Out>(in[0], in[1], out, Fn{});
    } else {
      select_loop<float>(in[0], in[1], in[2], out, Fn{});
    }
  });
}

void elementwise_step(ElementwiseOpcode opcode, const std::array<ElementwiseOperand, 3>& args, float* y,
                      std::int64_t n) {
  with_opcode(opcode, [&](auto op) { step<op.value>(args, y, n); });
}

}  // namespace kestrel::kernels::KESTREL_CPU_LEVEL
