// Layer normalization over the last axis: (x - mean) / sqrt(var + eps) * gamma + beta, and
// layer_norm_backprop, its gradient with respect to x.
//
// Mean and variance are computed in two passes in float32 (the mean first, then the squared
// deviations from it), which avoids the cancellation of E[x^2] - E[x]^2 on rows with a large mean.
// Both kernels compute them with the same function, so the backward pass normalizes exactly as
// the forward did.
#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include "framework/core/error.h"
#include "framework/core/thread_pool.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/nn.h"
#include "framework/ops/primitive.h"
#include "framework/ops/reduce.h"

namespace kestrel {
namespace {

using ArrayMap = Eigen::Map<Eigen::ArrayXf>;
using ConstArrayMap = Eigen::Map<const Eigen::ArrayXf>;

constexpr const char* kName = "layer_norm";
constexpr const char* kBackpropName = "layer_norm_backprop";
constexpr std::int64_t kGrainElements = 1 << 14;

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
  check_x(kName, x);
  check_parameter(kName, "gamma", inputs[1], x);
  check_parameter(kName, "beta", inputs[2], x);
  return x;
}

// Inputs (x, gamma, dy).
TensorSpec check_backprop_inputs(std::span<const TensorSpec> inputs) {
  const TensorSpec& x = inputs[0];
  const TensorSpec& dy = inputs[2];
  check_x(kBackpropName, x);
  check_parameter(kBackpropName, "gamma", inputs[1], x);
  if (!is_floating(dy.dtype)) {
    throw TypeError(op_message(kBackpropName, "dy is " + dy.to_string() + "; it must be float32 or bfloat16"));
  }
  if (dy.shape != x.shape) {
    throw ShapeError(op_message(kBackpropName, "x is " + x.shape.to_string() + " and dy is " + dy.shape.to_string() +
                                                   "; dy, the gradient of layer_norm's output, must be shaped like x"));
  }
  return x;
}

// Runs row_fn(r) for each of `rows` rows of d elements, in parallel chunks of about
// kGrainElements elements.
template <class RowFn>
void for_each_row(std::int64_t rows, std::int64_t d, const RowFn& row_fn) {
  parallel_for(rows, std::max<std::int64_t>(1, kGrainElements / d), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) row_fn(r);
  });
}

// Writes the row minus its mean into `centered` and returns 1 / sqrt(var + epsilon), with the
// population variance (divided by d). Forced inline: as a call per row it slowed layer_norm on
// [32,128,128] by about 12%.
[[gnu::always_inline]] inline float center_row(const ConstArrayMap& in, ArrayMap& centered, float inv_d, float epsilon) {
  // Summing offsets from the first element keeps the sum small when the row's mean is large.
  const float pivot = in[0];
  const float mean = pivot + (in - pivot).sum() * inv_d;
  centered = in - mean;
  return 1.0f / std::sqrt(centered.square().sum() * inv_d + epsilon);
}

void layer_norm_kernel(const float* x, const float* gamma, const float* beta, float* y, std::int64_t rows,
                       std::int64_t d, float epsilon) {
  ConstArrayMap scale(gamma, d);
  ConstArrayMap shift(beta, d);
  const float inv_d = 1.0f / static_cast<float>(d);
  for_each_row(rows, d, [&](std::int64_t r) {
    ConstArrayMap in(x + r * d, d);
    ArrayMap out(y + r * d, d);  // holds the centered row until the last step
    const float rstd = center_row(in, out, inv_d, epsilon);
    out = out * (rstd * scale) + shift;
  });
}

// With xhat = (x - mean) * rstd and gg = dy * gamma, per row:
//   dx = rstd * (gg - mean(gg) - xhat * mean(gg * xhat)).
void layer_norm_backprop_kernel(const float* x, const float* gamma, const float* dy, float* dx, std::int64_t rows,
                                std::int64_t d, float epsilon) {
  ConstArrayMap scale(gamma, d);
  const float inv_d = 1.0f / static_cast<float>(d);
  for_each_row(rows, d, [&](std::int64_t r) {
    ConstArrayMap in(x + r * d, d);
    ConstArrayMap dout(dy + r * d, d);
    ArrayMap out(dx + r * d, d);  // holds the centered row until the last step
    const float rstd = center_row(in, out, inv_d, epsilon);
    const auto gg = dout * scale;
    const float mean_gg = gg.sum() * inv_d;
    // mean(gg * xhat) folded with xhat's own rstd: the centered row times this is xhat * mean(gg * xhat).
    const float xhat_coefficient = (gg * out).sum() * inv_d * rstd * rstd;
    out = rstd * (gg - mean_gg - out * xhat_coefficient);
  });
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
    const std::int64_t d = x.shape[-1];
    layer_norm_kernel(x.as<float>(), inputs[1].as<float>(), inputs[2].as<float>(), output.as<float>(),
                      x.numel() / d, d, static_cast<float>(epsilon_));
  }

  // dx comes from layer_norm_backprop, one pass over each row. dgamma needs xhat, which
  // layer_norm with gamma = 1 and beta = 0 computes in one pass too. Both recompute mean and
  // rstd from x, so the op keeps a single output at the cost of one more pass over x.
  std::vector<Tensor> vjp(const VjpArgs& a) const override {
    const Tensor& x = a.primals[0];
    const Tensor& gamma = a.primals[1];
    const Tensor& beta = a.primals[2];
    const Tensor& g = a.cotangent;
    const ops::LayerNormOptions options{.epsilon = epsilon_};
    std::vector<Tensor> grads(3);
    if (a.wanted[0]) grads[0] = ops::layer_norm_backprop(x, gamma, g, options);
    if (a.wanted[1]) {
      const std::int64_t d = x.shape()[-1];
      Tensor xhat = ops::layer_norm(x, Tensor::ones({d}), Tensor::zeros({d}), options);
      grads[1] = as_dtype(ops::sum_to(g * xhat, gamma.shape()), gamma.dtype());
    }
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
    const std::int64_t d = x.shape[-1];
    layer_norm_backprop_kernel(x.as<float>(), inputs[1].as<float>(), inputs[2].as<float>(), output.as<float>(),
                               x.numel() / d, d, static_cast<float>(epsilon_));
  }

  // Not differentiable: Kestrel differentiates layer_norm once only. Backward treats a missing
  // gradient as zero, so returning none would make a gradient of a gradient through layer_norm
  // silently wrong; throwing says so instead. Backward calls this only when such a gradient is
  // requested, never in a first-order training step.
  std::vector<Tensor> vjp(const VjpArgs&) const override {
    throw ValueError(op_message(kBackpropName, "is not differentiable: Kestrel computes layer_norm's first "
                                               "derivative only, not a gradient of its gradient"));
  }

 private:
  double epsilon_;
};

}  // namespace

namespace ops {

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, const LayerNormOptions& options) {
  check_epsilon(kName, options.epsilon);
  return detail::apply_new<LayerNorm>({x, gamma, beta}, options.epsilon);
}

Tensor layer_norm_backprop(const Tensor& x, const Tensor& gamma, const Tensor& dy, const LayerNormOptions& options) {
  check_epsilon(kBackpropName, options.epsilon);
  return detail::apply_new<LayerNormBackprop>({x, gamma, dy}, options.epsilon);
}

}  // namespace ops
}  // namespace kestrel
