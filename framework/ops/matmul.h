// Matrix multiplication, plain and batched.
//
//   ops::matmul(x, w);                                   // [32,784] x [784,512]
//   ops::matmul(q, k, {.transpose_b = true});            // [B,H,T,D] x [B,H,T,D]^T -> [B,H,T,T]
//   ops::matmul(h, w);                                   // [B,T,D] x [D,O]: h is flattened
//   ops::matmul(x, w, {.bias = b});                      // x w + b, b [O] added as the product is stored
//   ops::matmul(x, w, {.bias = b, .activation = ops::MatmulActivation::gelu});   // gelu(x w + b)
//   ops::matmul(h, w, {.bias = b, .residual = x});       // x + (h w + b): a residual connection
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "framework/core/tensor.h"
#include "framework/ops/elementwise_opcode.h"

namespace kestrel::ops {

/// An activation the matrix multiply applies after the bias: ops::relu, ops::gelu and
/// ops::gelu(x, {.approximate = true}).
enum class MatmulActivation : std::uint8_t { none, relu, gelu, gelu_tanh };

struct MatmulOptions {
  bool transpose_a = false;  ///< use a's last two axes swapped
  bool transpose_b = false;  ///< use b's last two axes swapped
  /// [N], added to every row of the product by the matrix multiply itself (a Dense layer's bias,
  /// with no pass of its own over the output); undefined: none. Of the product's dtype.
  Tensor bias;
  /// Applied after the bias, with its op's bits either way. A float32 product that nothing
  /// records (no gradient tape, no jit trace) takes it in the GEMM, as each tile is stored: the
  /// output is written once and the pre-activation never held. Otherwise it is its op after the
  /// product, since a tape keeps GELU's input for the gradient and a trace leaves the choice to
  /// the jit's fusion, which sees the whole program; a bfloat16 product keeps its policy's op.
  MatmulActivation activation = MatmulActivation::none;
  /// Of the product's shape and dtype, added after the bias and before the activation by the
  /// matrix multiply as it stores each element (a residual connection, x + Dense(h), with no pass
  /// of its own); undefined: none. The numbers are those of ops::add after the product.
  Tensor residual;
};

/// a [..., M, K] x b [..., K, N] -> [..., M, N]. Batch dims must be equal, or one side is a
/// plain matrix, which is applied to every batch element. float32 and bfloat16.
Tensor matmul(const Tensor& a, const Tensor& b, const MatmulOptions& options = {});

}  // namespace kestrel::ops

namespace kestrel {
class Primitive;
namespace detail {

/// The matmul primitive `matmul` with `activation` (relu, gelu, gelu_tanh) applied by the GEMM as
/// it stores the product, after any bias: for the jit's passes, on programs already
/// differentiated (the result has no gradient of its own). Null when `matmul` is not a matmul
/// without an activation, or the activation is not one the GEMM applies.
std::shared_ptr<const Primitive> matmul_with_activation(const Primitive& matmul, ElementwiseOpcode activation);
/// The matmul primitive `matmul` taking one more operand, after any bias: a residual of the
/// product's stored shape, added after the bias and before any activation as the GEMM stores each
/// element: for the jit's residual fusion. Null when `matmul` is not a matmul without an
/// activation, a scale or a residual.
std::shared_ptr<const Primitive> matmul_with_residual(const Primitive& matmul);
/// The matmul primitive `matmul` with its product multiplied by `factor` (the GEMM's alpha, times
/// any scale it has): for the jit's scale folding, on programs already differentiated. Only a
/// product without a bias operand may take it: the GEMM scales before it adds a bias. Null when
/// `matmul` is not a matmul without an activation or a residual.
std::shared_ptr<const Primitive> matmul_scaled_by(const Primitive& matmul, float factor);
/// True for a matmul primitive that adds a residual operand (matmul_with_residual, or
/// MatmulOptions::residual).
bool matmul_has_residual(const Primitive& primitive);
/// True for a matmul primitive without a fused activation, a scale or a residual (what a bias may
/// still join).
bool is_plain_matmul(const Primitive& primitive);
/// True for a matmul primitive computing a^T b and nothing more (no activation, scale, residual or
/// heads layout; the op may still have a bias operand): a product over its operands' rows, as a weight
/// gradient's x^T dy sums over a batch's rows. Joining more rows to a and b (another replica's)
/// adds their product to the result.
bool is_product_over_rows(const Primitive& primitive);

/// Which of a matmul primitive's operands (a, b) and product (out) are in the heads layout: a
/// [..., H, R, C] batch of matrices kept as [..., R, H, C], as a [B, T, H, D] projection is before
/// attention moves its heads forward. The GEMM reads and writes them in place by strides, so the
/// jit's transpose folding drops those transposes. Such a primitive's inputs and output have the
/// kept shapes; it is made for programs already differentiated and has no gradient of its own.
struct MatmulHeadsLayout {
  bool a = false;
  bool b = false;
  bool out = false;
};
/// A shape kept in the heads layout, [..., R, H, C], as the [..., H, R, C] it stands for; the swap
/// is its own inverse, so it also gives the kept shape of a logical one. Rank 3 or more.
Shape swap_heads_axes(Shape shape);
/// The heads layout of a matmul primitive; nullopt for another primitive.
std::optional<MatmulHeadsLayout> matmul_heads_layout(const Primitive& primitive);
/// The matmul primitive `matmul` with the heads layout `heads` (its other parameters kept); null
/// when `matmul` is not a matmul primitive.
std::shared_ptr<const Primitive> matmul_with_heads_layout(const Primitive& matmul, MatmulHeadsLayout heads);

}  // namespace detail
}  // namespace kestrel
