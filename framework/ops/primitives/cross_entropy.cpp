// Sparse softmax cross-entropy, fused: loss = logsumexp(logits) - logits[label] per row, so the
// softmax is never materialized in the forward pass and large logits cannot overflow.
#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "framework/core/error.h"
#include "framework/core/thread_pool.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/nn.h"
#include "framework/ops/primitive.h"
#include "framework/ops/shape_ops.h"

namespace kestrel {
namespace {

// The name users call; the primitive itself is listed as softmax_cross_entropy.
constexpr const char* kName = "sparse_softmax_cross_entropy";
constexpr std::int64_t kGrainElements = 1 << 14;

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

template <class Label>
void cross_entropy_kernel(const float* logits, const Label* labels, float* loss, const Shape& labels_shape,
                          std::int64_t classes, std::int64_t ignore_index) {
  const std::int64_t rows = labels_shape.numel();
  // Labels are checked serially first, so the error names the first bad one at any thread count.
  for (std::int64_t r = 0; r < rows; ++r) {
    const auto label = static_cast<std::int64_t>(labels[r]);
    if (label != ignore_index && (label < 0 || label >= classes)) {
      throw IndexError(op_message(kName, element_name(r, labels_shape) + " is " + std::to_string(label) +
                                             ", outside [0, " + std::to_string(classes) +
                                             ") for logits with " + std::to_string(classes) +
                                             " classes; use a class index or ignore_index (" +
                                             std::to_string(ignore_index) + ")"));
    }
  }
  parallel_for(rows, std::max<std::int64_t>(1, kGrainElements / classes), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      const auto label = static_cast<std::int64_t>(labels[r]);
      if (label == ignore_index) {
        loss[r] = 0.0f;
        continue;
      }
      Eigen::Map<const Eigen::ArrayXf> row(logits + r * classes, classes);
      const float m = row.maxCoeff();
      // logsumexp - logits[label], with both terms taken relative to the row max.
      loss[r] = std::log((row - m).exp().sum()) - (row[label] - m);
    }
  });
}

TensorSpec check_inputs(const TensorSpec& logits, const TensorSpec& labels) {
  if (!is_floating(logits.dtype)) {
    throw TypeError(op_message(kName, "logits are " + logits.to_string() +
                                          "; they must be float32 or bfloat16 (unnormalized scores)"));
  }
  if (!is_integer(labels.dtype)) {
    throw TypeError(op_message(kName, "labels are " + labels.to_string() +
                                          "; they must be int32 or int64 class indices (for one-hot or soft "
                                          "targets, compute -sum(targets * log_softmax(logits)))"));
  }
  if (logits.shape.rank() == 0) {
    throw ShapeError(op_message(kName, "logits are a scalar; they must be [..., classes]"));
  }
  if (logits.shape[-1] == 0) {
    throw ShapeError(op_message(kName, "logits are " + logits.shape.to_string() + ": they need at least one class"));
  }
  Shape want;
  for (int i = 0; i + 1 < logits.shape.rank(); ++i) want.push_back(logits.shape[i]);
  if (labels.shape != want) {
    throw ShapeError(op_message(kName, "logits are " + logits.shape.to_string() + " and labels are " +
                                           labels.shape.to_string() + "; labels must be " + want.to_string() +
                                           " (logits' shape without the class axis)"));
  }
  return {want, logits.dtype};
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

  TensorSpec infer(std::span<const TensorSpec> inputs) const override { return check_inputs(inputs[0], inputs[1]); }

  void eval_cpu(std::span<const TensorView> inputs, const TensorView& output) const override {
    const TensorView& logits = inputs[0];
    const TensorView& labels = inputs[1];
    const std::int64_t classes = logits.shape[-1];
    if (labels.dtype == DType::int32) {
      cross_entropy_kernel(logits.as<float>(), labels.as<std::int32_t>(), output.as<float>(), labels.shape, classes,
                           ignore_index_);
    } else {
      cross_entropy_kernel(logits.as<float>(), labels.as<std::int64_t>(), output.as<float>(), labels.shape, classes,
                           ignore_index_);
    }
  }

  // d loss / d logits = softmax(logits) - one_hot(label), scaled by the row's cotangent; ignored
  // rows get zero (where, not multiply, so a non-finite cotangent there cannot leak in).
  std::vector<Tensor> vjp(const VjpArgs& a) const override {
    if (!a.wanted[0]) return {Tensor(), Tensor()};
    const Tensor& logits = a.primals[0];
    const Tensor& labels = a.primals[1];
    Tensor g = a.cotangent;
    if (Tensor ignored = ignore_value(labels.dtype(), ignore_index_); ignored.defined()) {
      g = ops::where(ops::not_equal(labels, ignored), g, ops::scalar_like(g, 0.0));
    }
    Tensor target = ops::one_hot(labels, logits.shape()[-1], {.dtype = logits.dtype()});
    Tensor d = ops::multiply(ops::subtract(ops::softmax(logits, -1), target), ops::expand_dims(g, -1));
    return {d, Tensor()};
  }

 private:
  std::int64_t ignore_index_;
};

}  // namespace

namespace ops {

Tensor sparse_softmax_cross_entropy(const Tensor& logits, const Tensor& labels, const CrossEntropyOptions& options) {
  return detail::apply_new<SoftmaxCrossEntropy>({logits, labels}, options.ignore_index);
}

}  // namespace ops
}  // namespace kestrel
