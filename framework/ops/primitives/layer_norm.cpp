// Layer normalization over the last axis: (x - mean) / sqrt(var + eps) * gamma + beta, and its
// gradients with respect to x (layer_norm_backprop) and gamma (layer_norm_gamma_backprop). The
// kernels are framework/ops/kernels/cpu/layer_norm.cpp.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include "framework/core/error.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/kernels/bfloat16_rows.h"
#include "framework/ops/kernels/cpu_kernels.h"
#include "framework/ops/nn.h"
#include "framework/ops/primitive.h"
#include "framework/ops/reduce.h"

namespace kestrel {
namespace {

constexpr const char* kLayerNormOp = "layer_norm";
constexpr const char* kBackpropName = "layer_norm_backprop";
constexpr const char* kGammaBackpropName = "layer_norm_gamma_backprop";

void check_epsilon(const char* op, double epsilon) {
  if (!(epsilon >= 0.0) || !std::isfinite(epsilon)) {
    std::ostringstream message;
    message << "epsilon is " << epsilon << "; it must be a finite number >= 0 (Keras uses 1e-3, BERT 1e-12)";
    throw ValueError(op_message(op, message.str()));
  }
}

void check_x(const char* op, const TensorSpec& x) {
  if (!is_floating(x.dtype)) {
    throw TypeError(op_message(op, "x is " + x.to_string() + "; it must be float32 or bfloat16"));
  }
  if (x.shape.rank() == 0) {
    throw ShapeError(op_message(op, "x is a scalar; layer_norm normalizes over the last axis of a [..., D] tensor"));
  }
}

void check_parameter(const char* op, const char* what, const TensorSpec& p, const TensorSpec& x) {
  if (!is_floating(p.dtype)) {
    throw TypeError(op_message(op, std::string(what) + " is " + p.to_string() + "; it must be float32 or bfloat16"));
  }
  const std::int64_t d = x.shape[-1];
  if (p.shape != Shape{d}) {
    throw ShapeError(op_message(op, "x is " + x.shape.to_string() + " and " + what + " is " + p.shape.to_string() +
                                        "; gamma and beta must be [" + std::to_string(d) +
                                        "], the size of x's last axis"));
  }
}

// Inputs (x, gamma, beta).
TensorSpec check_inputs(std::span<const TensorSpec> inputs) {
  const TensorSpec& x = inputs[0];
  check_x(kLayerNormOp, x);
  check_parameter(kLayerNormOp, "gamma", inputs[1], x);
  check_parameter(kLayerNormOp, "beta", inputs[2], x);
  return x;
}

void check_dy(const char* op, const TensorSpec& x, const TensorSpec& dy) {
  if (!is_floating(dy.dtype)) {
    throw TypeError(op_message(op, "dy is " + dy.to_string() + "; it must be float32 or bfloat16"));
  }
  if (dy.shape != x.shape) {
    throw ShapeError(op_message(op, "x is " + x.shape.to_string() + " and dy is " + dy.shape.to_string() +
                                        "; dy, the gradient of layer_norm's output, must be shaped like x"));
  }
}

// Inputs (x, gamma, dy).
TensorSpec check_backprop_inputs(std::span<const TensorSpec> inputs) {
  const TensorSpec& x = inputs[0];
  check_x(kBackpropName, x);
  check_parameter(kBackpropName, "gamma", inputs[1], x);
  check_dy(kBackpropName, x, inputs[2]);
  return x;
}

// The gradient ops are not differentiable: Kestrel differentiates layer_norm once only. Backward
// treats a missing gradient as zero, so returning none would make a gradient of a gradient
// through layer_norm silently wrong; throwing says so instead. Backward calls their vjp only when
// such a gradient is requested, never in a first-order training step.
[[noreturn]] void throw_not_differentiable(const char* op) {
  throw ValueError(op_message(op,
                              "is not differentiable: Kestrel computes layer_norm's first "
                              "derivative only, not a gradient of its gradient"));
}

// The output has x's dtype, so the inputs tell whether anything is bfloat16.
bool any_bfloat16(std::span<const TensorView> inputs) {
  return std::any_of(inputs.begin(), inputs.end(), [](const TensorView& t) { return t.dtype == DType::bfloat16; });
}

Tensor as_dtype(const Tensor& t, DType dtype) { return t.dtype() == dtype ? t : ops::cast(t, dtype); }

std::string epsilon_text(double epsilon) {
  std::ostringstream out;
  out << "epsilon=" << epsilon;
  return out.str();
}

class LayerNorm final : public PrimitiveOf<LayerNorm, OpId::layer_norm> {
 public:
  explicit LayerNorm(double epsilon) : epsilon_(epsilon) {}
  auto fields() const { return std::tie(epsilon_); }
  std::string params() const override { return epsilon_text(epsilon_); }

  TensorSpec infer(std::span<const TensorSpec> inputs) const override { return check_inputs(inputs); }

  void eval_cpu(std::span<const TensorView> inputs, const TensorView& output) const override {
    const TensorView& x = inputs[0];
    if (x.numel() == 0) return;
    if (any_bfloat16(inputs)) {
      kernels::layer_norm_bfloat16(x, inputs[1], inputs[2], output, static_cast<float>(epsilon_));
      return;
    }
    kernels::cpu().layer_norm(x, inputs[1].as<float>(), inputs[2].as<float>(), output, static_cast<float>(epsilon_));
  }
  bool handles_bfloat16() const override { return true; }

  // dx comes from layer_norm_backprop, one pass over each row, and dgamma from
  // layer_norm_gamma_backprop, one more: both recompute mean and rstd from x, so the op keeps a
  // single output and xhat is never stored.
  std::vector<Tensor> vjp(const VjpArgs& a) const override {
    const Tensor& x = a.primals[0];
    const Tensor& gamma = a.primals[1];
    const Tensor& beta = a.primals[2];
    const Tensor& g = a.cotangent;
    const ops::LayerNormOptions options{.epsilon = epsilon_};
    std::vector<Tensor> grads(3);
    if (a.wanted[0]) grads[0] = ops::layer_norm_backprop(x, gamma, g, options);
    if (a.wanted[1]) grads[1] = as_dtype(ops::layer_norm_gamma_backprop(x, g, options), gamma.dtype());
    if (a.wanted[2]) grads[2] = as_dtype(ops::sum_to(g, beta.shape()), beta.dtype());
    return grads;
  }

 private:
  double epsilon_;
};

// Inputs (x, gamma, dy) -> dx, shaped like x.
class LayerNormBackprop final : public PrimitiveOf<LayerNormBackprop, OpId::layer_norm_backprop> {
 public:
  explicit LayerNormBackprop(double epsilon) : epsilon_(epsilon) {}
  auto fields() const { return std::tie(epsilon_); }
  std::string params() const override { return epsilon_text(epsilon_); }

  TensorSpec infer(std::span<const TensorSpec> inputs) const override { return check_backprop_inputs(inputs); }

  void eval_cpu(std::span<const TensorView> inputs, const TensorView& output) const override {
    const TensorView& x = inputs[0];
    if (x.numel() == 0) return;
    if (any_bfloat16(inputs)) {
      kernels::layer_norm_backprop_bfloat16(x, inputs[1], inputs[2], output, static_cast<float>(epsilon_));
      return;
    }
    kernels::cpu().layer_norm_backprop(x, inputs[1].as<float>(), inputs[2], output, static_cast<float>(epsilon_));
  }
  bool handles_bfloat16() const override { return true; }

  std::vector<Tensor> vjp(const VjpArgs&) const override { throw_not_differentiable(kBackpropName); }

 private:
  double epsilon_;
};

// Inputs (x, dy) -> dgamma [d], in dy's dtype.
class LayerNormGammaBackprop final : public PrimitiveOf<LayerNormGammaBackprop, OpId::layer_norm_gamma_backprop> {
 public:
  explicit LayerNormGammaBackprop(double epsilon) : epsilon_(epsilon) {}
  auto fields() const { return std::tie(epsilon_); }
  std::string params() const override { return epsilon_text(epsilon_); }

  TensorSpec infer(std::span<const TensorSpec> inputs) const override {
    const TensorSpec &x = inputs[0], &dy = inputs[1];
    check_x(kGammaBackpropName, x);
    check_dy(kGammaBackpropName, x, dy);
    return {Shape{x.shape[-1]}, dy.dtype};
  }

  void eval_cpu(std::span<const TensorView> inputs, const TensorView& output) const override {
    kernels::layer_norm_gamma_backprop(inputs[0], inputs[1], output, static_cast<float>(epsilon_));
  }
  bool handles_bfloat16() const override { return true; }

  std::vector<Tensor> vjp(const VjpArgs&) const override { throw_not_differentiable(kGammaBackpropName); }

 private:
  double epsilon_;
};

}  // namespace

namespace ops {

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, const LayerNormOptions& options) {
  check_epsilon(kLayerNormOp, options.epsilon);
  return detail::apply_new<LayerNorm>({x, gamma, beta}, options.epsilon);
}

Tensor layer_norm_backprop(const Tensor& x, const Tensor& gamma, const Tensor& dy, const LayerNormOptions& options) {
  check_epsilon(kBackpropName, options.epsilon);
  return detail::apply_new<LayerNormBackprop>({x, gamma, dy}, options.epsilon);
}

Tensor layer_norm_gamma_backprop(const Tensor& x, const Tensor& dy, const LayerNormOptions& options) {
  check_epsilon(kGammaBackpropName, options.epsilon);
  return detail::apply_new<LayerNormGammaBackprop>({x, dy}, options.epsilon);
}

}  // namespace ops
}  // namespace kestrel
