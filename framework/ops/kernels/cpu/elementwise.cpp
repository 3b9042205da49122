// The elementwise opcodes' float32 kernels, for every CPU level: each op's own kernel over whole
// tensors, and one instruction of a fused program over a block (the plan and the blocks are
// framework/ops/kernels/fused_elementwise_kernel.cpp's). Both apply the opcode's functor
// (elementwise_functors.h), so a fused program rounds exactly as the ops it replaces, at each
// level. The one switch over opcodes is with_opcode's, expanded from KESTREL_ELEMENTWISE_OPCODES.
// The opcodes also run on bfloat16 tensors: the same float32 arithmetic on values widened as they
// are read, each result rounded once as it is stored; at the avx512 level the arithmetic binary
// ops do it sixteen lanes at a time in registers, and the others widen a block at a time into an
// aligned buffer (bfloat16_runs.h's conversions, inline). Binary functors with an Eigen form
// (gelu's gradients) run on Eigen's vector functions like the unary ones, over same-shaped
// operands only (their ops broadcast nothing).
#include "framework/ops/kernels/cpu/level.h"

#include <Eigen/Core>

#include <algorithm>
#include <array>
#include <type_traits>

#include "framework/core/thread_pool.h"
#include "framework/ops/kernels/cpu/bfloat16_runs.h"
#include "framework/ops/kernels/elementwise_functors.h"
#include "framework/ops/kernels/elementwise_loops.h"

namespace kestrel::kernels::KESTREL_CPU_LEVEL {
namespace {

using FloatArray = Eigen::Map<const Eigen::ArrayXf>;

// Threads split on 16-element boundaries: Eigen computes whole packets with its vector functions
// and only a tail with scalar ones, which round differently (sqrt under fast math). Aligned
// splits leave one tail, at the end, so the bits do not depend on the thread count.
constexpr std::int64_t kLanes = 16;
// bfloat16 elements widened at a time (into an aligned block, so that Eigen starts with whole
// packets there too): a multiple of kLanes, and 4 KiB of float32, well inside L1.
constexpr std::int64_t kWidenedBlock = 1024;
static_assert(kWidenedBlock % kLanes == 0);

template <ElementwiseOpcode kOpcode>
void unary_run(const float* x, float* y, std::int64_t n) {
  using Fn = ElementwiseFn<kOpcode>;
  if constexpr (std::is_invocable_v<Fn, FloatArray>) {
    Eigen::Map<Eigen::ArrayXf>(y, n) = Fn{}(FloatArray(x, n));
  } else {
    std::int64_t i = 0;  // a scalar functor (round_bfloat16)
#if defined(__AVX512F__)
    if constexpr (kOpcode == ElementwiseOpcode::round_bfloat16) {
      if (cpu_has_avx512_bf16()) i = bf16x16::store_rounded_natively(x, n, y);
      for (; i + bf16x16::kLanes <= n; i += bf16x16::kLanes) bf16x16::store_rounded_float(x + i, y + i);
    }
#endif
    for (; i < n; ++i) y[i] = Fn{}(x[i]);
  }
}

// A binary functor over Eigen arrays only (gelu's gradients). The scalar ones' templates would
// take arrays too, so they are told apart by taking floats.
template <ElementwiseOpcode kOpcode>
constexpr bool kArrayBinary = opcode_arity(kOpcode) == 2 && !std::is_invocable_v<ElementwiseFn<kOpcode>, float, float>;

template <ElementwiseOpcode kOpcode>
void binary_run(const float* a, const float* b, float* y, std::int64_t n) {
  Eigen::Map<Eigen::ArrayXf>(y, n) = ElementwiseFn<kOpcode>{}(FloatArray(a, n), FloatArray(b, n));
}

// Calls fn(lo, hi) over [0, n) in chunks over the thread pool, split on kLanes boundaries.
template <class Fn>
void for_each_chunk(std::int64_t n, const Fn& fn) {
  parallel_for((n + kLanes - 1) / kLanes, kElementwiseGrain / kLanes,
               [&](std::int64_t first, std::int64_t last) { fn(first * kLanes, std::min(last * kLanes, n)); });
}

/// A unary functor over a tensor, chunk by chunk over the thread pool.
template <ElementwiseOpcode kOpcode>
void unary_tensor(const TensorView& in, const TensorView& out) {
  const float* x = in.as<float>();
  float* y = out.as<float>();
  for_each_chunk(in.numel(), [&](std::int64_t lo, std::int64_t hi) { unary_run<kOpcode>(x + lo, y + lo, hi - lo); });
}

// The same over bfloat16, each chunk in blocks that start on kLanes boundaries: every element is
// computed as unary_tensor computes it on the widened tensor.
template <ElementwiseOpcode kOpcode>
void unary_tensor_bf16(const TensorView& in, const TensorView& out) {
  const bfloat16* x = in.as<bfloat16>();
  bfloat16* y = out.as<bfloat16>();
  for_each_chunk(in.numel(), [&](std::int64_t first, std::int64_t hi) {
    alignas(64) std::array<float, kWidenedBlock> block;
    for (std::int64_t lo = first; lo < hi; lo += kWidenedBlock) {
      const std::int64_t count = std::min(kWidenedBlock, hi - lo);
      widen_run(x + lo, count, block.data());
      unary_run<kOpcode>(block.data(), block.data(), count);
      round_run(block.data(), count, y + lo);
    }
  });
}

// The same for an array-form binary functor over two tensors of out's shape.
template <ElementwiseOpcode kOpcode>
void binary_tensor(const TensorView& a, const TensorView& b, const TensorView& out) {
  KESTREL_DCHECK(a.shape == out.shape && b.shape == out.shape);
  const float* x = a.as<float>();
  const float* z = b.as<float>();
  float* y = out.as<float>();
  for_each_chunk(out.numel(),
                 [&](std::int64_t lo, std::int64_t hi) { binary_run<kOpcode>(x + lo, z + lo, y + lo, hi - lo); });
}

template <ElementwiseOpcode kOpcode>
void binary_tensor_bf16(const TensorView& a, const TensorView& b, const TensorView& out) {
  KESTREL_DCHECK(a.shape == out.shape && b.shape == out.shape);
  const bfloat16* x = a.as<bfloat16>();
  const bfloat16* z = b.as<bfloat16>();
  bfloat16* y = out.as<bfloat16>();
  for_each_chunk(out.numel(), [&](std::int64_t first, std::int64_t hi) {
    alignas(64) std::array<float, kWidenedBlock> block_a;
    alignas(64) std::array<float, kWidenedBlock> block_b;
    for (std::int64_t lo = first; lo < hi; lo += kWidenedBlock) {
      const std::int64_t count = std::min(kWidenedBlock, hi - lo);
      widen_run(x + lo, count, block_a.data());
      widen_run(z + lo, count, block_b.data());
      binary_run<kOpcode>(block_a.data(), block_b.data(), block_a.data(), count);
      round_run(block_a.data(), count, y + lo);
    }
  });
}

#if defined(__AVX512F__)
// 16 float32 lanes, on which the arithmetic functors' templates (a + b, a >= b ? a : b) compute
// as they do on one float: GCC's vector extensions apply the same IEEE operations lane by lane.
using Lanes = float __attribute__((vector_size(64)));
template <class Fn>
constexpr bool kLaneArithmetic = std::is_same_v<std::invoke_result_t<Fn, float, float>, float>;

// A run of a bfloat16 arithmetic functor 16 elements at a time in registers: widened as loaded,
// rounded as stored, so a short run (a row broadcast's) costs no staging.
template <class Fn>
void binary_run_in_lanes(const bfloat16* ra, std::int64_t sa, const bfloat16* rb, std::int64_t sb, bfloat16* ro,
                         std::int64_t len, Fn fn) {
  const Lanes a0 = _mm512_set1_ps(static_cast<float>(ra[0])), b0 = _mm512_set1_ps(static_cast<float>(rb[0]));
  std::int64_t k = 0;
  for (; k + bf16x16::kLanes <= len; k += bf16x16::kLanes) {
    const Lanes x = sa == 1 ? Lanes(bf16x16::load_widened(ra + k)) : a0;
    const Lanes y = sb == 1 ? Lanes(bf16x16::load_widened(rb + k)) : b0;
    bf16x16::store_rounded(__m512(fn(x, y)), ro + k);
  }
  for (; k < len; ++k) ro[k] = bfloat16(fn(static_cast<float>(ra[k * sa]), static_cast<float>(rb[k * sb])));
}
#endif

// A scalar binary functor (add, multiply, a comparison) over bfloat16 tensors with broadcasting:
// at the avx512 level the arithmetic ones sixteen lanes at a time in registers; otherwise each
// run of the operands widened a block at a time, a float32 loop over the block (which the compiler
// vectorizes), and the block rounded once as it is stored (a comparison's bools stored as they
// are).
template <class Out, class Fn>
void binary_tensor_bf16_scalar_fn(const TensorView& a, const TensorView& b, const TensorView& out, Fn fn) {
  for_each_binary_run<bfloat16, Out>(
      a, b, out,
      [&](const bfloat16* ra, std::int64_t sa, const bfloat16* rb, std::int64_t sb, Out* ro, std::int64_t len) {
#if defined(__AVX512F__)
        if constexpr (kLaneArithmetic<Fn>) return binary_run_in_lanes(ra, sa, rb, sb, ro, len, fn);
#endif
        alignas(64) std::array<float, kWidenedBlock> block_a;
        alignas(64) std::array<float, kWidenedBlock> block_b;
        alignas(64) std::array<std::conditional_t<std::is_same_v<Out, bool>, bool, float>, kWidenedBlock> result;
        // The run's elements [lo, lo + count) of an operand as float32: widened, or its one element.
        auto widened = [&](const bfloat16* run, std::int64_t stride, std::int64_t lo, std::int64_t count,
                           float* block) {
          if (stride == 1) {
            widen_run(run + lo, count, block);
          } else {
            std::fill(block, block + count, static_cast<float>(run[0]));
          }
        };
        for (std::int64_t lo = 0; lo < len; lo += kWidenedBlock) {
          const std::int64_t count = std::min(kWidenedBlock, len - lo);
          widened(ra, sa, lo, count, block_a.data());
          widened(rb, sb, lo, count, block_b.data());
          for (std::int64_t k = 0; k < count; ++k) result[k] = fn(block_a[k], block_b[k]);
          if constexpr (std::is_same_v<Out, bool>) {
            std::copy(result.begin(), result.begin() + count, ro + lo);
          } else {
            round_run(result.data(), count, ro + lo);
          }
        }
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
  } else if constexpr (kArrayBinary<kOpcode>) {
    // Eigen reads arrays: a uniform operand is spread over a strip first, a strip at a time.
    constexpr std::int64_t kStrip = 256;
    alignas(64) std::array<std::array<float, kStrip>, 2> strips;
    for (std::size_t k = 0; k < 2; ++k) strips[k].fill(args[k].value);
    for (std::int64_t lo = 0; lo < n; lo += kStrip) {
      const std::int64_t count = std::min(kStrip, n - lo);
      auto operand = [&](std::size_t k) { return args[k].data ? args[k].data + lo : strips[k].data(); };
      binary_run<kOpcode>(operand(0), operand(1), y + lo, count);
    }
  } else if constexpr (opcode_arity(kOpcode) == 2) {
    visit(args[0], [&](auto a) { visit(args[1], [&](auto b) { loop(fn, y, n, a, b); }); });
  } else {
    visit(args[0], [&](auto mask) {
      visit(args[1], [&](auto a) { visit(args[2], [&](auto b) { loop(fn, y, n, mask, a, b); }); });
    });
  }
}

// Each opcode's kernel over whole tensors of T, float or bfloat16 (a bfloat16 result is the
// float32 one rounded; select copies the chosen bits).
template <class T>
void elementwise_tensors(ElementwiseOpcode opcode, std::span<const TensorView> in, const TensorView& out) {
  constexpr bool kFloat32 = std::is_same_v<T, float>;
  with_opcode(opcode, [&](auto op) {
    using Fn = ElementwiseFn<op.value>;
    if constexpr (opcode_arity(op.value) == 1) {
      if constexpr (kFloat32) {
        unary_tensor<op.value>(in[0], out);
      } else {
        unary_tensor_bf16<op.value>(in[0], out);
      }
    } else if constexpr (kArrayBinary<op.value>) {
      if constexpr (kFloat32) {
        binary_tensor<op.value>(in[0], in[1], out);
      } else {
        binary_tensor_bf16<op.value>(in[0], in[1], out);
      }
    } else if constexpr (opcode_arity(op.value) == 2) {
      using Result = std::invoke_result_t<Fn, float, float>;  // bool for comparisons
      using Out = std::conditional_t<std::is_same_v<Result, bool>, bool, T>;
      if constexpr (kFloat32) {
        binary_loop<float, Out>(in[0], in[1], out, Fn{});
      } else {
        binary_tensor_bf16_scalar_fn<Out>(in[0], in[1], out, Fn{});
      }
    } else {
      select_loop<T>(in[0], in[1], in[2], out, Fn{});
    }
  });
}

}  // namespace

void elementwise_float32(ElementwiseOpcode opcode, std::span<const TensorView> in, const TensorView& out) {
  elementwise_tensors<float>(opcode, in, out);
}

void elementwise_bfloat16(ElementwiseOpcode opcode, std::span<const TensorView> in, const TensorView& out) {
  elementwise_tensors<bfloat16>(opcode, in, out);
}

void elementwise_step(ElementwiseOpcode opcode, const std::array<ElementwiseOperand, 3>& args, float* y,
                      std::int64_t n) {
  with_opcode(opcode, [&](auto op) { step<op.value>(args, y, n); });
}

}  // namespace kestrel::kernels::KESTREL_CPU_LEVEL
