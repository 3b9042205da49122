// The one list of Kestrel's ops. Everything that enumerates ops (names, kinds, the op test
// table, the instructions of fused elementwise programs) expands this list, so none of them can
// drift apart.
//
//   op_name(OpId::matmul);    // "matmul"
//   op_kind(OpId::add);       // OpKind::broadcast
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace kestrel {

/// What the jit's fusion needs to know about an op.
enum class OpKind {
  elementwise,  ///< output[i] depends on input[i] only; all shapes equal
  broadcast,    ///< elementwise after NumPy broadcasting of the inputs
  reduce,       ///< reduces over axes
  view,         ///< output shares the input's data (no kernel)
  opaque,       ///< anything else (matmul, conv, gather, ...)
};

// X(name, kind): one line per op. The name is also the public function's name in kestrel::ops
// (where a C++ keyword or a clash forbids it, the public function is noted beside it).
#define KESTREL_OPS(X)                                                                          \
  /* binary arithmetic, broadcasting */                                                         \
  X(add, broadcast)                                                                             \
  X(subtract, broadcast)                                                                        \
  X(multiply, broadcast)                                                                        \
  X(divide, broadcast)                                                                          \
  X(maximum, broadcast)                                                                         \
  X(minimum, broadcast)                                                                         \
  X(pow, broadcast)                                                                             \
  /* comparisons (bool output) and selection */                                                 \
  X(equal, broadcast)                                                                           \
  X(not_equal, broadcast)                                                                       \
  X(less, broadcast)                                                                            \
  X(less_equal, broadcast)                                                                      \
  X(greater, broadcast)                                                                         \
  X(greater_equal, broadcast)                                                                   \
  X(where, broadcast)                                                                           \
  /* unary */                                                                                   \
  X(negative, elementwise)                                                                      \
  X(abs, elementwise)                                                                           \
  X(exp, elementwise)                                                                           \
  X(log, elementwise)                                                                           \
  X(tanh, elementwise)                                                                          \
  X(sqrt, elementwise)                                                                          \
  X(rsqrt, elementwise)                                                                         \
  X(erf, elementwise)                                                                           \
  X(sigmoid, elementwise)                                                                       \
  X(relu, elementwise)                                                                          \
  X(gelu, elementwise)                                                                          \
  X(gelu_backprop, elementwise) /* gelu's gradient in x, from x and dy */                       \
  X(cast, elementwise)                                                                          \
  /* reductions over axes */                                                                    \
  X(sum, reduce)                                                                                \
  X(max, reduce)                                                                                \
  X(argmax, reduce) /* int64 indices, no gradient */                                            \
  /* normalization, losses, regularization */                                                   \
  X(softmax, opaque)                                                                            \
  X(log_softmax, opaque)                                                                        \
  X(softmax_cross_entropy, opaque)          /* ops::sparse_softmax_cross_entropy */             \
  X(softmax_cross_entropy_backprop, opaque) /* its gradient in logits */                        \
  X(layer_norm, opaque)                                                                         \
  X(layer_norm_backprop, opaque)       /* layer_norm's gradient in x; no gradient of its own */ \
  X(layer_norm_gamma_backprop, opaque) /* ... in gamma: sum of dy * xhat over the rows */       \
  X(dropout, opaque)                                                                            \
  X(random_fold_in, opaque) /* random::fold_in; int64 keys, no gradient */                      \
  /* linear algebra */                                                                          \
  X(matmul, opaque)                                                                             \
  /* shape and indexing */                                                                      \
  X(reshape, view)                                                                              \
  X(broadcast_to, broadcast)                                                                    \
  X(transpose, opaque)                                                                          \
  X(slice, opaque)                                                                              \
  X(concat, opaque)                                                                             \
  X(pad, opaque)                                                                                \
  X(gather, opaque)                                                                             \
  X(scatter_add, opaque)                                                                        \
  X(one_hot, opaque)                                                                            \
  /* convolution and pooling, NHWC */                                                           \
  X(conv2d, opaque)                                                                             \
  X(conv2d_backprop_input, opaque)                                                              \
  X(conv2d_backprop_filter, opaque)                                                             \
  X(max_pool2d, opaque)                                                                         \
  X(max_pool2d_backprop, opaque)                                                                \
  X(max_pool2d_select, opaque)                                                                  \
  X(avg_pool2d, opaque)                                                                         \
  X(avg_pool2d_backprop, opaque)                                                                \
  /* fused elementwise programs (optimizer updates, the jit's fusion); no gradient */           \
  X(fused_elementwise, broadcast)                                                               \
  /* collectives over a step's replicas (merge points of a compiled replica step) */            \
  X(cross_replica_sum, opaque)                                                                  \
  X(all_gather, opaque)                                                                         \
  /* control flow: a loop whose body is a program of its own (ops::scan, jit/scan.h) */         \
  X(scan, opaque)

enum class OpId : int {
#define KESTREL_OP_ENUM(name, kind) name,
  KESTREL_OPS(KESTREL_OP_ENUM)
#undef KESTREL_OP_ENUM
};

#define KESTREL_OP_COUNT(name, kind) +1
inline constexpr std::size_t kNumOps = 0 KESTREL_OPS(KESTREL_OP_COUNT);
#undef KESTREL_OP_COUNT
// Adding an op? Update this count, then add its test case (tests/framework/ops/) — the
// coverage test fails until every op in the list has one.
static_assert(kNumOps == 61, "op list changed: update kNumOps's expected count and the op test table");

std::string_view op_name(OpId id);

inline constexpr std::array<OpKind, kNumOps> kOpKinds = {
#define KESTREL_OP_KIND(name, kind) OpKind::kind,
    KESTREL_OPS(KESTREL_OP_KIND)
#undef KESTREL_OP_KIND
};
constexpr OpKind op_kind(OpId id) { return kOpKinds[static_cast<std::size_t>(id)]; }

// X(opcode, arity, op, symbol): the instructions of fused elementwise programs (ops::fused_elementwise,
// the jit's elementwise fusion). Each computes `op` as the op's own kernel does, with the one
// functor both call (ops/kernels/elementwise_functors.h); the op's primitive names its opcode
// (Primitive::fusion_opcode). The opcode enum, names, arities, the builder's methods and the
// kernels' switches all expand this list. `symbol` is how program formulas write the opcode: an
// infix operator for binary ones, a prefix for unary ones, or "" for a call (exp(x)).
// An op of kind elementwise or broadcast without a line here is a fusion barrier or is only
// carried through fused regions; tests/framework/ops/fusion_coverage_test.cpp says which and why.
#define KESTREL_ELEMENTWISE_OPCODES(X)                                                  \
  X(negative, 1, negative, "-")                                                         \
  X(abs, 1, abs, "")                                                                    \
  X(square, 1, multiply, "") /* multiply(x, x), which ops::square is */                 \
  X(sqrt, 1, sqrt, "")                                                                  \
  X(rsqrt, 1, rsqrt, "")                                                                \
  X(exp, 1, exp, "")                                                                    \
  X(log, 1, log, "")                                                                    \
  X(tanh, 1, tanh, "")                                                                  \
  X(sigmoid, 1, sigmoid, "")                                                            \
  X(relu, 1, relu, "")                                                                  \
  X(erf, 1, erf, "")                                                                    \
  X(gelu, 1, gelu, "")      /* gelu: x * Phi(x), with erf */                            \
  X(gelu_tanh, 1, gelu, "") /* gelu {.approximate = true}: the tanh approximation */    \
  /* a cast to bfloat16 and back: a fused program's bfloat16 values, kept in float32 */ \
  X(round_bfloat16, 1, cast, "")                                                        \
  X(add, 2, add, "+")                                                                   \
  X(subtract, 2, subtract, "-")                                                         \
  X(multiply, 2, multiply, "*")                                                         \
  X(divide, 2, divide, "/")                                                             \
  X(maximum, 2, maximum, "")                                                            \
  X(minimum, 2, minimum, "")                                                            \
  /* comparisons: 1 where true, else 0 (a bool inside a fused program) */               \
  X(greater, 2, greater, ">")                                                           \
  X(greater_equal, 2, greater_equal, ">=")                                              \
  X(less, 2, less, "<")                                                                 \
  X(less_equal, 2, less_equal, "<=")                                                    \
  X(equal, 2, equal, "==")                                                              \
  X(not_equal, 2, not_equal, "!=")                                                      \
  /* select(mask, a, b): a where mask != 0, else b */                                   \
  X(select, 3, where, "")                                                               \
  /* gelu_backprop(x, dy): dy * gelu'(x), exact and approximate */                      \
  X(gelu_backprop, 2, gelu_backprop, "")                                                \
  X(gelu_tanh_backprop, 2, gelu_backprop, "")

// Each opcode computes an op of the list that fusion may take: one of kind elementwise or broadcast.
#define KESTREL_OPCODE_CHECK(opcode, arity, op, symbol)                                             \
  static_assert(op_kind(OpId::op) == OpKind::elementwise || op_kind(OpId::op) == OpKind::broadcast, \
                "opcode " #opcode " computes " #op ", which is neither elementwise nor broadcast"); \
  static_assert((arity) >= 1 && (arity) <= 3, "opcode " #opcode ": an instruction reads 1 to 3 registers");
KESTREL_ELEMENTWISE_OPCODES(KESTREL_OPCODE_CHECK)
#undef KESTREL_OPCODE_CHECK

}  // namespace kestrel
