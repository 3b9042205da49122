// Layer normalization over the last axis: (x - mean) / sqrt(var + eps) * gamma + beta.
//
// Mean and variance are computed in two passes in float32 (the mean first, then the squared
// deviations from it), which avoids the cancellation of E[x^2] - E[x]^2 on rows with a large mean.
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
constexpr std::int64_t kGrainElements = 1 << 14;

void check_parameter(const char* what, const TensorSpec& p, const TensorSpec& x) {
  if (!is_floating(p.dtype)) {
    throw TypeError(op_message(kName, std::string(what) + " is " + p.to_string() + "; it must be float32 or bfloat16"));
  }
  const std::int64_t d = x.shape[-1];
  if (p.shape != Shape{d}) {
    throw ShapeError(op_message(kName, "x is " + x.shape.to_string() + " and " + what + " is " + p.shape.to_string() +
                                           "; gamma and beta must be [" + std::to_string(d) +
                                           "], the size of x's last axis"));
  }
}

TensorSpec check_inputs(std::span<const TensorSpec> inputs) {
  const TensorSpec& x = inputs[0];
  if (!is_floating(x.dtype)) {
    throw TypeError(op_message(kName, "x is " + x.to_string() + "; it must be float32 or bfloat16"));
  }
  if (x.shape.rank() == 0) {
    throw ShapeError(op_message(kName, "x is a scalar; layer_norm normalizes over the last axis of a [..., D] tensor"));
  }
  check_parameter("gamma", inputs[1], x);
  check_parameter("beta", inputs[2], x);
  return x;
}

void layer_norm_kernel(const float* x, const float* gamma, const float* beta, float* y, std::int64_t rows,
                       std::int64_t d, float epsilon) {
  ConstArrayMap scale(gamma, d);
  ConstArrayMap shift(beta, d);
  const float inv_d = 1.0f / static_cast<float>(d);
  parallel_for(rows, std::max<std::int64_t>(1, kGrainElements / d), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      ConstArrayMap in(x + r * d, d);
      ArrayMap out(y + r * d, d);
      // Summing offsets from the first element keeps the sum small when the row's mean is large.
      const float pivot = in[0];
      const float mean = pivot + (in - pivot).sum() * inv_d;
      out = in - mean;  // the output row holds the centered values until the last step
      const float rstd = 1.0f / std::sqrt(out.square().sum() * inv_d + epsilon);
      out = out * (rstd * scale) + shift;
    }
  });
}

Tensor as_dtype(const Tensor& t, DType dtype) { return t.dtype() == dtype ? t : ops::cast(t, dtype); }

class LayerNorm final : public PrimitiveOf<LayerNorm, OpId::layer_norm> {
 public:
  explicit LayerNorm(double epsilon) : epsilon_(epsilon) {}
  auto fields() const { return std::tie(epsilon_); }
  std::string params() const override {
    std::ostringstream out;
    out << "epsilon=" << epsilon_;
    return out.str();
  }

  TensorSpec infer(std::span<const TensorSpec> inputs) const override { return check_inputs(inputs); }

  void eval_cpu(std::span<const TensorView> inputs, const TensorView& output) const override {
    const TensorView& x = inputs[0];
    if (x.numel() == 0) return;
    const std::int64_t d = x.shape[-1];
    layer_norm_kernel(x.as<float>(), inputs[1].as<float>(), inputs[2].as<float>(), output.as<float>(),
                      x.numel() / d, d, static_cast<float>(epsilon_));
  }

  // Recomputes mean and rstd from x, so the op keeps a single output at the cost of one more
  // pass over x. dx = rstd * (g*gamma - mean(g*gamma) - xhat * mean(g*gamma*xhat)).
  std::vector<Tensor> vjp(const VjpArgs& a) const override {
    const Tensor& x = a.primals[0];
    const Tensor& gamma = a.primals[1];
    const Tensor& beta = a.primals[2];
    const Tensor& g = a.cotangent;
    const ops::ReduceOptions last{.axes = {-1}, .keepdims = true};
    std::vector<Tensor> grads(3);
    if (a.wanted[2]) grads[2] = as_dtype(ops::sum_to(g, beta.shape()), beta.dtype());
    if (!a.wanted[0] && !a.wanted[1]) return grads;

    Tensor centered = x - ops::mean(x, last);
    Tensor rstd = ops::rsqrt(ops::mean(ops::square(centered), last) + epsilon_);
    Tensor xhat = centered * rstd;
    if (a.wanted[1]) grads[1] = as_dtype(ops::sum_to(g * xhat, gamma.shape()), gamma.dtype());
    if (a.wanted[0]) {
      Tensor gg = g * gamma;
      Tensor dx = rstd * (gg - ops::mean(gg, last) - xhat * ops::mean(gg * xhat, last));
      grads[0] = as_dtype(dx, x.dtype());
    }
    return grads;
  }

 private:
  double epsilon_;
};

}  // namespace

namespace ops {

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, const LayerNormOptions& options) {
  if (!(options.epsilon >= 0.0) || !std::isfinite(options.epsilon)) {
    std::ostringstream message;
    message << "epsilon is " << options.epsilon << "; it must be a finite number >= 0 (Keras uses 1e-3, BERT 1e-12)";
    throw ValueError(op_message(kName, message.str()));
  }
  return detail::apply_new<LayerNorm>({x, gamma, beta}, options.epsilon);
}

}  // namespace ops
}  // namespace kestrel
