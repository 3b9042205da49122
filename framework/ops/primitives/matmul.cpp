// matmul: a [..., M, K] x b [..., K, N] with optional transposes of the last two axes.
//
// The primitive handles plain matrices and equal batch dims; the public function maps the
// other layouts onto it: [B,T,D] x [D,O] flattens a to [B*T, D] (one large GEMM, and the
// weight gradient comes out 2-D), and a plain matrix facing a batch is broadcast. After a and b
// come the epilogue's operands, each added by the GEMM as it stores the product: a bias [N] to
// every row, then a residual of the product's shape (x + f(x), read in place of a separate add).
// The jit's transpose folding may also set a heads layout on an operand or the product: a
// [..., H, R, C] matrix batch kept as [..., R, H, C] is read or written in place by strides
// (detail::MatmulHeadsLayout in matmul.h).
#include "framework/ops/matmul.h"

#include <memory>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "framework/core/error.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/kernels/gemm.h"
#include "framework/ops/primitive.h"
#include "framework/ops/recording.h"
#include "framework/ops/reduce.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::ops {
namespace {

constexpr std::string_view kOp = "matmul";

std::string describe(const char* name, const TensorSpec& spec, bool transposed) {
  return std::string(name) + " is " + spec.shape.to_string() +
         (transposed ? (std::string(" (transpose_") + name + ")") : "");
}

std::string operands(const TensorSpec& a, const TensorSpec& b, bool transpose_a, bool transpose_b) {
  return describe("a", a, transpose_a) + ", " + describe("b", b, transpose_b);
}

// Checks what every matmul needs: float dtypes that agree, and a matrix (rank >= 2) on each side.
void check_operands(const TensorSpec& a, const TensorSpec& b, bool transpose_a, bool transpose_b) {
  for (const TensorSpec* s : {&a, &b}) {
    if (!is_floating(s->dtype)) {
      throw TypeError(op_message(kOp, "a is " + a.to_string() + ", b is " + b.to_string() +
                                          ": matmul needs float32 or bfloat16 operands (cast with ops::cast)"));
    }
  }
  if (a.shape.rank() < 2 || b.shape.rank() < 2) {
    throw ShapeError(op_message(kOp, operands(a, b, transpose_a, transpose_b) +
                                         ": both operands need at least 2 dims [..., rows, cols]; "
                                         "use ops::expand_dims or ops::reshape to make a vector a matrix"));
  }
  const std::int64_t inner_a = a.shape[transpose_a ? -2 : -1];
  const std::int64_t inner_b = b.shape[transpose_b ? -1 : -2];
  if (inner_a != inner_b) {
    throw ShapeError(op_message(kOp, operands(a, b, transpose_a, transpose_b) + ": inner dims differ (" +
                                         std::to_string(inner_a) + " vs " + std::to_string(inner_b) + ")"));
  }
}

void check_bias(const TensorSpec& bias, DType dtype, std::int64_t n) {
  const std::string message = "the bias is " + bias.to_string() + "; it must be " +
                              TensorSpec{Shape{n}, dtype}.to_string() + ", one value per column of the product";
  if (bias.dtype != dtype) throw TypeError(op_message(kOp, message + " in its dtype (cast it with ops::cast)"));
  if (bias.shape != Shape{n}) throw ShapeError(op_message(kOp, message));
}

void check_residual(const TensorSpec& residual, const TensorSpec& product) {
  const std::string message = "the residual is " + residual.to_string() + "; it must be " + product.to_string() +
                              ", the product's shape and dtype";
  if (residual.dtype != product.dtype) {
    throw TypeError(op_message(kOp, message + " (cast it with ops::cast)"));
  }
  if (residual.shape != product.shape) throw ShapeError(op_message(kOp, message + " (a residual does not broadcast)"));
}

Shape batch_dims(const Shape& s) {
  Shape out;
  for (int i = 0; i < s.rank() - 2; ++i) out.push_back(s[i]);
  return out;
}

using kestrel::detail::swap_heads_axes;

// Where the matrices of one operand lie, in elements: its leading dimension, and the strides of
// its two batch levels (the heads, and everything before them).
struct Placement {
  std::int64_t ld, stride, outer_stride;
};

// `stored` holds [..., H, R, C] as it is, or [..., R, H, C] with heads_layout.
Placement place(const Shape& stored, bool heads_layout) {
  const std::int64_t c = stored[-1];
  if (!heads_layout) return {c, stored[-2] * c, stored.rank() >= 3 ? stored[-3] * stored[-2] * c : 0};
  return {stored[-2] * c, c, stored[-3] * stored[-2] * c};
}

Shape with_matrix(const Shape& batch, std::int64_t rows, std::int64_t cols) {
  Shape out = batch;
  out.push_back(rows);
  out.push_back(cols);
  return out;
}

class Matmul final : public PrimitiveOf<Matmul, OpId::matmul> {
 public:
  Matmul(bool transpose_a, bool transpose_b, kernels::GemmActivation activation = kernels::GemmActivation::none,
         kestrel::detail::MatmulHeadsLayout heads = {}, float scale = 1.0f, bool residual = false)
      : transpose_a_(transpose_a),
        transpose_b_(transpose_b),
        activation_(activation),
        heads_(heads),
        scale_(scale),
        residual_(residual) {}
  auto fields() const {
    return std::tie(transpose_a_, transpose_b_, activation_, heads_.a, heads_.b, heads_.out, scale_, residual_);
  }
  std::string params() const override {
    return std::string("transpose_a=") + (transpose_a_ ? "true" : "false") +
           ", transpose_b=" + (transpose_b_ ? "true" : "false") + activation_param() + (heads_.a ? ", heads_a" : "") +
           (heads_.b ? ", heads_b" : "") + (heads_.out ? ", heads_out" : "") + scale_param() +
           (residual_ ? ", residual" : "");
  }
  bool transpose_a() const { return transpose_a_; }
  bool transpose_b() const { return transpose_b_; }
  kernels::GemmActivation activation() const { return activation_; }
  kestrel::detail::MatmulHeadsLayout heads() const { return heads_; }
  float scale() const { return scale_; }
  /// The last operand is a residual, added to the product after any bias.
  bool has_residual() const { return residual_; }
  /// True when a call with `operands` operands has a bias: the third, before any residual.
  bool has_bias(std::size_t operands) const { return operands == (residual_ ? 4u : 3u); }
  /// No fused activation and no scale: the product as the op computes it, which a bias, an
  /// activation or a scale may still join (a scaled one takes no bias: the GEMM applies its alpha
  /// before the bias, where a scale after the sum would have to scale the bias too).
  bool is_plain() const { return activation_ == kernels::GemmActivation::none && scale_ == 1.0f; }

  TensorSpec infer(std::span<const TensorSpec> in) const override {
    for (const auto& [name, spec, layout] : {std::tuple{"a", &in[0], heads_.a}, std::tuple{"b", &in[1], heads_.b}}) {
      if (layout && spec->shape.rank() < 3) {
        throw ShapeError(op_message(kOp, std::string(name) + " is " + spec->shape.to_string() +
                                             "; an operand in the heads layout [..., R, H, C] needs at least 3 dims"));
      }
    }
    const TensorSpec a{heads_.a ? swap_heads_axes(in[0].shape) : in[0].shape, in[0].dtype};
    const TensorSpec b{heads_.b ? swap_heads_axes(in[1].shape) : in[1].shape, in[1].dtype};
    check_operands(a, b, transpose_a_, transpose_b_);
    const std::size_t fewest = residual_ ? 3 : 2;  // a, b and the residual; a bias may come before it
    if (in.size() != fewest && in.size() != fewest + 1) {
      throw Error(op_message(kOp, "a matmul (" + params() + ") takes " + std::to_string(fewest) + " or " +
                                      std::to_string(fewest + 1) + " operands, not " + std::to_string(in.size()) +
                                      "; a Kestrel bug if reached: report it with this message"));
    }
    if (has_bias(in.size())) check_bias(in[2], a.dtype, b.shape[transpose_b_ ? -2 : -1]);
    if ((has_bias(in.size()) || residual_) && scale_ != 1.0f) {
      throw Error(op_message(kOp, "a matmul with a scale (" + params() +
                                      ") takes no bias or residual: the GEMM scales the product before it adds them; "
                                      "a Kestrel bug if reached: report it with this message"));
    }
    if (a.dtype != b.dtype) {
      throw TypeError(op_message(kOp, "a is " + a.to_string() + ", b is " + b.to_string() +
                                          ": the primitive needs equal dtypes (ops::matmul promotes them)"));
    }
    if (batch_dims(a.shape) != batch_dims(b.shape)) {
      throw ShapeError(op_message(kOp, operands(a, b, transpose_a_, transpose_b_) +
                                           ": batch dims must be equal (ops::matmul broadcasts a plain matrix)"));
    }
    const Shape out =
        with_matrix(batch_dims(a.shape), a.shape[transpose_a_ ? -1 : -2], b.shape[transpose_b_ ? -2 : -1]);
    if (heads_.out && out.rank() < 3) {
      throw ShapeError(op_message(kOp, "the product is " + out.to_string() +
                                           "; a product in the heads layout [..., R, H, C] needs at least 3 dims"));
    }
    const TensorSpec stored{heads_.out ? swap_heads_axes(out) : out, a.dtype};
    if (residual_) check_residual(in.back(), stored);
    return stored;
  }

  // bfloat16 operands multiply without float32 copies of them (kernels/gemm.h).
  bool handles_bfloat16() const override { return true; }

  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    if (out.dtype == DType::bfloat16) {
      multiply<bfloat16>(in, out);
    } else {
      multiply<float>(in, out);
    }
  }

  // With C = op(a) op(b): d op(a) = dC op(b)^T and d op(b) = op(a)^T dC, each undone through
  // the transpose flags so that no explicit transpose is ever materialized.
  std::vector<Tensor> vjp(const VjpArgs& args) const override {
    const Tensor& a = args.primals[0];
    const Tensor& b = args.primals[1];
    const Tensor& g = args.cotangent;
    if (!is_plain() || heads_.a || heads_.b || heads_.out) {
      throw Error(op_message(kOp, "a matmul with a fused activation, a scale or a heads layout (" + params() +
                                      ") is made by the jit for programs already differentiated, and has no "
                                      "gradient of its own; a Kestrel bug if reached: report it with this message"));
    }
    std::vector<Tensor> grads(args.primals.size());
    // The residual is added as it is: its gradient is the cotangent's.
    if (residual_ && args.wanted.back()) grads.back() = g;
    if (has_bias(grads.size()) && args.wanted[2]) {
      // The bias reaches every row of every product: its gradient sums the cotangent's rows.
      std::vector<int> rows(static_cast<std::size_t>(g.rank() - 1));
      std::iota(rows.begin(), rows.end(), 0);
      grads[2] = sum(g, {.axes = rows});
    }
    if (args.wanted[0]) {
      grads[0] = transpose_a_ ? matmul(b, g, {.transpose_a = transpose_b_, .transpose_b = true})
                              : matmul(g, b, {.transpose_a = false, .transpose_b = !transpose_b_});
    }
    if (args.wanted[1]) {
      grads[1] = transpose_b_ ? matmul(g, a, {.transpose_a = true, .transpose_b = transpose_a_})
                              : matmul(a, g, {.transpose_a = !transpose_a_, .transpose_b = false});
    }
    return grads;
  }

 private:
  template <class T>
  void multiply(std::span<const TensorView> in, const TensorView& out) const {
    const Shape a = heads_.a ? swap_heads_axes(in[0].shape) : in[0].shape;
    const Shape product = heads_.out ? swap_heads_axes(out.shape) : out.shape;
    const std::int64_t m = product[-2];
    const std::int64_t n = product[-1];
    const std::int64_t k = a[transpose_a_ ? -2 : -1];
    kernels::GemmArgsOf<T> args{.m = m,
                                .n = n,
                                .k = k,
                                .a = in[0].as<T>(),
                                .transpose_a = transpose_a_,
                                .b = in[1].as<T>(),
                                .transpose_b = transpose_b_,
                                .c = out.as<T>(),
                                .alpha = scale_,
                                .batch = batch_dims(product).numel(),
                                .stride_a = in[0].shape[-2] * in[0].shape[-1],
                                .stride_b = in[1].shape[-2] * in[1].shape[-1],
                                .stride_c = m * n,
                                .bias = has_bias(in.size()) ? in[2].as<T>() : nullptr,
                                .residual = residual_ ? in.back().as<T>() : nullptr,
                                .activation = activation_};
    if (heads_.a || heads_.b || heads_.out) {
      // Two batch levels: the heads (axis -3 of the product), and the product of the axes before.
      const Placement pa = place(in[0].shape, heads_.a), pb = place(in[1].shape, heads_.b);
      const Placement pc = place(out.shape, heads_.out);
      args.batch = product[-3];
      args.batch_outer = product[-3] > 0 ? batch_dims(product).numel() / product[-3] : 0;  // no heads: nothing to do
      std::tie(args.lda, args.stride_a, args.outer_stride_a) = std::tuple{pa.ld, pa.stride, pa.outer_stride};
      std::tie(args.ldb, args.stride_b, args.outer_stride_b) = std::tuple{pb.ld, pb.stride, pb.outer_stride};
      std::tie(args.ldc, args.stride_c, args.outer_stride_c) = std::tuple{pc.ld, pc.stride, pc.outer_stride};
    }
    kernels::gemm(args);
  }

  std::string scale_param() const {
    if (scale_ == 1.0f) return "";
    std::ostringstream out;
    out << ", scale=" << scale_;
    return out.str();
  }

  std::string activation_param() const {
    switch (activation_) {
      case kernels::GemmActivation::none: return "";
      case kernels::GemmActivation::relu: return ", activation=relu";
      case kernels::GemmActivation::gelu_erf: return ", activation=gelu";
      case kernels::GemmActivation::gelu_tanh: return ", activation=gelu_tanh";
    }
    return "";
  }

  bool transpose_a_;
  bool transpose_b_;
  kernels::GemmActivation activation_;
  kestrel::detail::MatmulHeadsLayout heads_;
  float scale_;    // the GEMM's alpha: set by the jit's scale folding, only on a product with no bias
  bool residual_;  // the last operand is added to the product after the bias
};

Tensor to_float32(const Tensor& t) { return t.dtype() == DType::float32 ? t : cast(t, DType::float32); }

// The activation the GEMM applies to a product of `dtype` as it stores it: none where something
// records the product (see MatmulOptions::activation) or it is bfloat16.
kernels::GemmActivation epilogue_activation(MatmulActivation activation, DType dtype) {
  const bool recorded = detail::op_recorder() != nullptr || detail::gradient_recording_depth() > 0;
  if (recorded || dtype != DType::float32) return kernels::GemmActivation::none;
  switch (activation) {
    case MatmulActivation::none: return kernels::GemmActivation::none;
    case MatmulActivation::relu: return kernels::GemmActivation::relu;
    case MatmulActivation::gelu: return kernels::GemmActivation::gelu_erf;
    case MatmulActivation::gelu_tanh: return kernels::GemmActivation::gelu_tanh;
  }
  return kernels::GemmActivation::none;
}

// `activation` as its own op.
Tensor activated(const Tensor& x, MatmulActivation activation) {
  switch (activation) {
    case MatmulActivation::none: return x;
    case MatmulActivation::relu: return relu(x);
    case MatmulActivation::gelu: return gelu(x);
    case MatmulActivation::gelu_tanh: return gelu(x, {.approximate = true});
  }
  return x;
}

// a x b (+ bias) (+ residual) with `epilogue` applied by the GEMM, as the primitive or a
// flattened or broadcast operand lets it run; a and b of one dtype.
Tensor product(const Tensor& a, const Tensor& b, const MatmulOptions& options, kernels::GemmActivation epilogue) {
  const bool ta = options.transpose_a;
  const bool tb = options.transpose_b;
  const Shape batch_a = batch_dims(a.shape());
  const Shape batch_b = batch_dims(b.shape());
  const bool residual = options.residual.defined();
  // The operands, with the bias and the residual (as `residual_shape`) after them.
  const auto with_epilogue = [&](Tensor lhs, Tensor rhs, const Shape& residual_shape) {
    std::vector<Tensor> in{std::move(lhs), std::move(rhs)};
    if (options.bias.defined()) {
      check_bias(options.bias.spec(), in[0].dtype(), b.shape()[tb ? -2 : -1]);
      in.push_back(options.bias);
    }
    if (residual) {
      in.push_back(options.residual.shape() == residual_shape ? options.residual
                                                              : reshape(options.residual, residual_shape));
    }
    return in;
  };
  // The product's shape, which the residual must have.
  const auto product_shape = [&](const Shape& batch) {
    return with_matrix(batch, a.shape()[ta ? -1 : -2], b.shape()[tb ? -2 : -1]);
  };
  if (residual && (batch_a == batch_b || a.rank() == 2 || b.rank() == 2)) {  // else the batch dims' error below
    const Shape expected = product_shape(batch_a.rank() >= batch_b.rank() ? batch_a : batch_b);
    check_residual(options.residual.spec(), TensorSpec{expected, a.dtype()});
  }
  const auto apply = [&](std::vector<Tensor> in) {
    return detail::apply_new<Matmul>(std::move(in), ta, tb, epilogue, kestrel::detail::MatmulHeadsLayout{}, 1.0f,
                                     residual);
  };
  if (batch_a == batch_b) return apply(with_epilogue(a, b, product_shape(batch_a)));

  if (b.rank() == 2 && !ta) {
    // [..., M, K] x [K, N]: one [prod(...) * M, K] x [K, N] product.
    const std::int64_t m = a.shape()[-2];
    const std::int64_t n = b.shape()[tb ? -2 : -1];
    Tensor flat = reshape(a, {batch_a.numel() * m, a.shape()[-1]});
    Tensor out = apply(with_epilogue(flat, b, Shape{batch_a.numel() * m, n}));
    return reshape(out, with_matrix(batch_a, m, n));
  }
  if (b.rank() == 2) {
    return apply(
        with_epilogue(a, broadcast_to(b, with_matrix(batch_a, b.shape()[0], b.shape()[1])), product_shape(batch_a)));
  }
  if (a.rank() == 2) {
    return apply(
        with_epilogue(broadcast_to(a, with_matrix(batch_b, a.shape()[0], a.shape()[1])), b, product_shape(batch_b)));
  }

  throw ShapeError(op_message(kOp, operands(a.spec(), b.spec(), ta, tb) + ": batch dims " + batch_a.to_string() +
                                       " and " + batch_b.to_string() +
                                       " differ; they must be equal, or one side must be a plain matrix"));
}

}  // namespace

Tensor matmul(const Tensor& a_in, const Tensor& b_in, const MatmulOptions& options) {
  if (!a_in.defined() || !b_in.defined()) {
    throw ValueError(op_message(
        kOp, std::string(a_in.defined() ? "b" : "a") + " is an undefined tensor; pass a tensor with a value"));
  }
  check_operands(a_in.spec(), b_in.spec(), options.transpose_a, options.transpose_b);
  // float32 with bfloat16 computes in float32, as the elementwise ops do.
  const Tensor a = a_in.dtype() == b_in.dtype() ? a_in : to_float32(a_in);
  const Tensor b = a_in.dtype() == b_in.dtype() ? b_in : to_float32(b_in);
  const kernels::GemmActivation epilogue = epilogue_activation(options.activation, a.dtype());
  const Tensor out = product(a, b, options, epilogue);
  return epilogue == kernels::GemmActivation::none ? activated(out, options.activation) : out;
}

}  // namespace kestrel::ops

namespace kestrel {

std::shared_ptr<const Primitive> detail::matmul_with_activation(const Primitive& matmul, ElementwiseOpcode activation) {
  const auto* plain = dynamic_cast<const ops::Matmul*>(&matmul);
  if (plain == nullptr || !plain->is_plain()) return nullptr;
  kernels::GemmActivation fused = kernels::GemmActivation::none;
  switch (activation) {
    case ElementwiseOpcode::relu: fused = kernels::GemmActivation::relu; break;
    case ElementwiseOpcode::gelu: fused = kernels::GemmActivation::gelu_erf; break;
    case ElementwiseOpcode::gelu_tanh: fused = kernels::GemmActivation::gelu_tanh; break;
    default: return nullptr;
  }
  return std::make_shared<const ops::Matmul>(plain->transpose_a(), plain->transpose_b(), fused, plain->heads(), 1.0f,
                                             plain->has_residual());
}

std::shared_ptr<const Primitive> detail::matmul_with_residual(const Primitive& matmul) {
  const auto* plain = dynamic_cast<const ops::Matmul*>(&matmul);
  if (plain == nullptr || !plain->is_plain() || plain->has_residual()) return nullptr;
  return std::make_shared<const ops::Matmul>(plain->transpose_a(), plain->transpose_b(), kernels::GemmActivation::none,
                                             plain->heads(), 1.0f, true);
}

Shape detail::swap_heads_axes(Shape shape) {
  std::swap(shape[shape.rank() - 3], shape[shape.rank() - 2]);
  return shape;
}

std::optional<detail::MatmulHeadsLayout> detail::matmul_heads_layout(const Primitive& primitive) {
  const auto* matmul = dynamic_cast<const ops::Matmul*>(&primitive);
  if (matmul == nullptr) return std::nullopt;
  return matmul->heads();
}

std::shared_ptr<const Primitive> detail::matmul_with_heads_layout(const Primitive& matmul, MatmulHeadsLayout heads) {
  const auto* plain = dynamic_cast<const ops::Matmul*>(&matmul);
  if (plain == nullptr) return nullptr;
  if (plain->has_residual() && heads.out != plain->heads().out) {
    // The residual is read in the product's layout: moving the product would move it too.
    throw Error(op_message("matmul", "a matmul with a residual (" + plain->params() +
                                         ") cannot change its product's heads layout; a Kestrel bug if reached: "
                                         "report it with this message"));
  }
  return std::make_shared<const ops::Matmul>(plain->transpose_a(), plain->transpose_b(), plain->activation(), heads,
                                             plain->scale(), plain->has_residual());
}

std::shared_ptr<const Primitive> detail::matmul_scaled_by(const Primitive& matmul, float factor) {
  const auto* product = dynamic_cast<const ops::Matmul*>(&matmul);
  if (product == nullptr || product->activation() != kernels::GemmActivation::none || product->has_residual()) {
    return nullptr;
  }
  return std::make_shared<const ops::Matmul>(product->transpose_a(), product->transpose_b(),
                                             kernels::GemmActivation::none, product->heads(),
                                             product->scale() * factor);
}

bool detail::matmul_has_residual(const Primitive& primitive) {
  const auto* matmul = dynamic_cast<const ops::Matmul*>(&primitive);
  return matmul != nullptr && matmul->has_residual();
}

bool detail::is_plain_matmul(const Primitive& primitive) {
  const auto* matmul = dynamic_cast<const ops::Matmul*>(&primitive);
  return matmul != nullptr && matmul->is_plain() && !matmul->has_residual();
}

bool detail::is_product_over_rows(const Primitive& primitive) {
  const auto* matmul = dynamic_cast<const ops::Matmul*>(&primitive);
  if (matmul == nullptr || !matmul->is_plain() || matmul->has_residual()) return false;
  const MatmulHeadsLayout heads = matmul->heads();
  return matmul->transpose_a() && !matmul->transpose_b() && !heads.a && !heads.b && !heads.out;
}

}  // namespace kestrel
