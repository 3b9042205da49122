// Sparse softmax cross-entropy, fused: loss = logsumexp(logits) - logits[label] per row, so the
// softmax is never materialized in the forward pass and large logits cannot overflow. Its
// gradient, softmax_cross_entropy_backprop, is fused too: (softmax - one_hot) * dloss is written
// in one pass over each row, and ignored rows cost no exp at all, where the same expression as
// separate ops makes four passes over a [rows, classes] tensor and allocates three of them. The
// kernels are framework/ops/kernels/cpu/cross_entropy.cpp.
//
// The loss is float32 whatever the logits' dtype, as Keras keeps losses in float32 under a mixed
// precision policy; bfloat16 logits are widened a block of rows at a time, exactly, so the loss
// of bfloat16 logits is the loss of their float32 values (kernels/bfloat16_rows.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "framework/core/error.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/kernels/bfloat16_rows.h"
#include "framework/ops/kernels/cpu_kernels.h"
#include "framework/ops/nn.h"
#include "framework/ops/primitive.h"
#include "framework/ops/reduce.h"
#include "framework/ops/shape_ops.h"

namespace kestrel {
namespace {

// The names users call; the primitives are listed as softmax_cross_entropy(_backprop).
constexpr const char* kCrossEntropyOp = "sparse_softmax_cross_entropy";
constexpr const char* kBackpropName = "sparse_softmax_cross_entropy_backprop";

// "labels[1,2]" for element `flat` of a labels tensor of the given shape.
std::string element_name(std::int64_t flat, const Shape& shape) {
  if (shape.rank() == 0) return "labels";
  std::vector<std::int64_t> index(static_cast<std::size_t>(shape.rank()));
  for (int axis = shape.rank() - 1; axis >= 0; --axis) {
    index[static_cast<std::size_t>(axis)] = flat % shape[axis];
    flat /= shape[axis];
  }
  std::string out = "labels[";
  for (std::size_t i = 0; i < index.size(); ++i) out += (i ? "," : "") + std::to_string(index[i]);
  return out + "]";
}

// Throws IndexError naming the first label that is neither a class index nor ignore_index. It
// runs serially, before any row is computed, so the error names the same label at any thread count.
template <class Label>
void check_labels(std::string_view op, const Label* labels, const Shape& labels_shape, std::int64_t classes,
                  std::int64_t ignore_index) {
  const std::int64_t rows = labels_shape.numel();
  for (std::int64_t r = 0; r < rows; ++r) {
    const auto label = static_cast<std::int64_t>(labels[r]);
    if (label != ignore_index && (label < 0 || label >= classes)) {
      throw IndexError(op_message(op, element_name(r, labels_shape) + " is " + std::to_string(label) +
                                          ", outside [0, " + std::to_string(classes) + ") for logits with " +
                                          std::to_string(classes) + " classes; use a class index or ignore_index (" +
                                          std::to_string(ignore_index) + ")"));
    }
  }
}

// Checks every label before a kernel runs, so the kernels (compiled per CPU level) never throw.
void check_labels(std::string_view op, const TensorView& labels, std::int64_t classes, std::int64_t ignore_index) {
  if (labels.dtype == DType::int32) {
    check_labels(op, labels.as<std::int32_t>(), labels.shape, classes, ignore_index);
  } else {
    check_labels(op, labels.as<std::int64_t>(), labels.shape, classes, ignore_index);
  }
}

TensorSpec check_inputs(std::string_view op, const TensorSpec& logits, const TensorSpec& labels) {
  if (!is_floating(logits.dtype)) {
    throw TypeError(op_message(
        op, "logits are " + logits.to_string() + "; they must be float32 or bfloat16 (unnormalized scores)"));
  }
  if (!is_integer(labels.dtype)) {
    throw TypeError(op_message(op, "labels are " + labels.to_string() +
                                       "; they must be int32 or int64 class indices (for one-hot or soft "
                                       "targets, compute -sum(targets * log_softmax(logits)))"));
  }
  if (logits.shape.rank() == 0) {
    throw ShapeError(op_message(op, "logits are a scalar; they must be [..., classes]"));
  }
  if (logits.shape[-1] == 0) {
    throw ShapeError(op_message(op, "logits are " + logits.shape.to_string() + ": they need at least one class"));
  }
  Shape want;
  for (int i = 0; i + 1 < logits.shape.rank(); ++i) want.push_back(logits.shape[i]);
  if (labels.shape != want) {
    throw ShapeError(op_message(op, "logits are " + logits.shape.to_string() + " and labels are " +
                                        labels.shape.to_string() + "; labels must be " + want.to_string() +
                                        " (logits' shape without the class axis)"));
  }
  return {want, DType::float32};
}

// A rank-0 tensor of labels' dtype holding ignore_index, or undefined when that dtype cannot hold it
// (then no label can equal it).
Tensor ignore_value(DType dtype, std::int64_t ignore_index) {
  if (dtype == DType::int64) return Tensor::from_vector<std::int64_t>({ignore_index}, Shape{});
  using Limits = std::numeric_limits<std::int32_t>;
  if (ignore_index < Limits::min() || ignore_index > Limits::max()) return Tensor();
  return Tensor::from_vector<std::int32_t>({static_cast<std::int32_t>(ignore_index)}, Shape{});
}

class SoftmaxCrossEntropy final : public PrimitiveOf<SoftmaxCrossEntropy, OpId::softmax_cross_entropy> {
 public:
  explicit SoftmaxCrossEntropy(std::int64_t ignore_index) : ignore_index_(ignore_index) {}
  auto fields() const { return std::tie(ignore_index_); }
  std::string params() const override { return "ignore_index=" + std::to_string(ignore_index_); }

  TensorSpec infer(std::span<const TensorSpec> inputs) const override {
    return check_inputs(kCrossEntropyOp, inputs[0], inputs[1]);
  }

  void eval_cpu(std::span<const TensorView> inputs, const TensorView& output) const override {
    const TensorView& logits = inputs[0];
    const std::int64_t classes = logits.shape[-1];
    check_labels(kCrossEntropyOp, inputs[1], classes, ignore_index_);
    if (logits.dtype == DType::bfloat16) {
      kernels::sparse_softmax_cross_entropy_bfloat16(logits, inputs[1], output, ignore_index_);
      return;
    }
    kernels::cpu().sparse_softmax_cross_entropy(logits.as<float>(), inputs[1], output.as<float>(), classes,
                                                ignore_index_);
  }
  bool handles_bfloat16() const override { return true; }
  bool widens_bfloat16_exactly() const override { return true; }

  // d loss / d logits = softmax(logits) - one_hot(label), scaled by the row's cotangent; ignored
  // rows get zero.
  std::vector<Tensor> vjp(const VjpArgs& a) const override {
    if (!a.wanted[0]) return {Tensor(), Tensor()};
    return {ops::sparse_softmax_cross_entropy_backprop(a.primals[0], a.primals[1], a.cotangent,
                                                       {.ignore_index = ignore_index_}),
            Tensor()};
  }

 private:
  std::int64_t ignore_index_;
};

// Inputs (logits, labels, dloss) -> d logits, shaped like logits.
class SoftmaxCrossEntropyBackprop final
    : public PrimitiveOf<SoftmaxCrossEntropyBackprop, OpId::softmax_cross_entropy_backprop> {
 public:
  explicit SoftmaxCrossEntropyBackprop(std::int64_t ignore_index) : ignore_index_(ignore_index) {}
  auto fields() const { return std::tie(ignore_index_); }
  std::string params() const override { return "ignore_index=" + std::to_string(ignore_index_); }

  TensorSpec infer(std::span<const TensorSpec> inputs) const override {
    const TensorSpec& logits = inputs[0];
    const TensorSpec& dloss = inputs[2];
    const TensorSpec loss = check_inputs(kBackpropName, logits, inputs[1]);
    if (!is_floating(dloss.dtype) || dloss.shape != loss.shape) {
      const std::string message = "logits are " + logits.to_string() + " and dloss is " + dloss.to_string() +
                                  "; dloss must be " + loss.shape.to_string() +
                                  " (the loss's shape), float32 or bfloat16";
      if (!is_floating(dloss.dtype)) throw TypeError(op_message(kBackpropName, message));
      throw ShapeError(op_message(kBackpropName, message));
    }
    return logits;
  }

  void eval_cpu(std::span<const TensorView> inputs, const TensorView& output) const override {
    const TensorView& logits = inputs[0];
    const std::int64_t classes = logits.shape[-1];
    check_labels(kBackpropName, inputs[1], classes, ignore_index_);
    if (logits.dtype == DType::bfloat16 || inputs[2].dtype == DType::bfloat16) {
      kernels::sparse_softmax_cross_entropy_backprop_bfloat16(logits, inputs[1], inputs[2], output, ignore_index_);
      return;
    }
    kernels::cpu().sparse_softmax_cross_entropy_backprop(logits.as<float>(), inputs[1], inputs[2].as<float>(),
                                                         output.as<float>(), classes, ignore_index_);
  }
  bool handles_bfloat16() const override { return true; }
  bool widens_bfloat16_exactly() const override { return true; }

  // With p = softmax(logits), t = one_hot(labels) and g = dloss (zero on ignored rows), the
  // output is (p - t) * g: its gradient in logits is softmax's Jacobian applied to c * g, and in
  // dloss it is sum((p - t) * c) over the classes (zero on ignored rows). The loss thus stays
  // twice differentiable.
  std::vector<Tensor> vjp(const VjpArgs& a) const override {
    const Tensor& logits = a.primals[0];
    const Tensor& labels = a.primals[1];
    const Tensor& c = a.cotangent;
    Tensor counted;  // bool per row: its label is not ignore_index (undefined: every row counts)
    if (Tensor ignored = ignore_value(labels.dtype(), ignore_index_); ignored.defined()) {
      counted = ops::not_equal(labels, ignored);
    }
    auto masked = [&](const Tensor& per_row) {
      return counted.defined() ? ops::where(counted, per_row, ops::scalar_like(per_row, 0.0)) : per_row;
    };
    // dloss may be float32 with bfloat16 logits: both gradients are computed in the wider dtype
    // and returned in their primal's.
    const Tensor& dloss = a.primals[2];
    const DType wide =
        logits.dtype() == DType::float32 || dloss.dtype() == DType::float32 ? DType::float32 : DType::bfloat16;
    const Tensor p = ops::softmax(ops::cast(logits, wide), -1);
    const Tensor cw = ops::cast(c, wide);
    std::vector<Tensor> grads(3);
    if (a.wanted[0]) {
      const Tensor u = ops::multiply(cw, ops::expand_dims(masked(ops::cast(dloss, wide)), -1));
      const Tensor dot = ops::sum(ops::multiply(u, p), {.axes = {-1}, .keepdims = true});
      grads[0] = ops::cast(ops::multiply(p, ops::subtract(u, dot)), logits.dtype());
    }
    if (a.wanted[2]) {
      const Tensor t = ops::one_hot(labels, logits.shape()[-1], {.dtype = wide});
      grads[2] = ops::cast(masked(ops::sum(ops::multiply(cw, ops::subtract(p, t)), {.axes = {-1}})), dloss.dtype());
    }
    return grads;
  }

 private:
  std::int64_t ignore_index_;
};

}  // namespace

namespace ops {

Tensor sparse_softmax_cross_entropy(const Tensor& logits, const Tensor& labels, const CrossEntropyOptions& options) {
  return detail::apply_new<SoftmaxCrossEntropy>({logits, labels}, options.ignore_index);
}

Tensor sparse_softmax_cross_entropy_backprop(const Tensor& logits, const Tensor& labels, const Tensor& dloss,
                                             const CrossEntropyOptions& options) {
  return detail::apply_new<SoftmaxCrossEntropyBackprop>({logits, labels, dloss}, options.ignore_index);
}

}  // namespace ops
}  // namespace kestrel
