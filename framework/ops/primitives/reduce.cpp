// Reductions over axes (sum, max), and the composites built on them (mean, sum_to). The kernel is
// framework/ops/kernels/cpu/reduce.cpp.
#include <algorithm>
#include <string>
#include <tuple>

#include "framework/core/error.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/kernels/cpu_kernels.h"
#include "framework/ops/reduce.h"
#include "framework/ops/shape_ops.h"

namespace kestrel {
namespace {

using kernels::Reduction;

/// Sorted, unique, non-negative axes; empty input means every axis.
std::vector<int> normalize_axes(const std::vector<int>& axes, int rank, const char* op) {
  std::vector<int> out;
  if (axes.empty()) {
    for (int i = 0; i < rank; ++i) out.push_back(i);
    return out;
  }
  for (int axis : axes) out.push_back(normalize_axis(axis, rank, op));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    throw ShapeError(op_message(op, "axes list a dimension twice; list each axis once"));
  }
  return out;
}

Shape reduced_shape(const Shape& in, const std::vector<int>& axes, bool keepdims) {
  Shape out;
  for (int d = 0; d < in.rank(); ++d) {
    bool reduced = std::binary_search(axes.begin(), axes.end(), d);
    if (!reduced) {
      out.push_back(in[d]);
    } else if (keepdims) {
      out.push_back(1);
    }
  }
  return out;
}

template <Reduction kReduction>
class Reduce final : public PrimitiveOf<Reduce<kReduction>, kReduction == Reduction::sum ? OpId::sum : OpId::max> {
 public:
  Reduce(std::vector<int> axes, bool keepdims) : axes_(std::move(axes)), keepdims_(keepdims) {}
  auto fields() const { return std::tie(axes_, keepdims_); }
  std::string params() const override {
    std::string s = "axes=[";
    for (std::size_t i = 0; i < axes_.size(); ++i) {
      if (i > 0) s += ',';
      s += std::to_string(axes_[i]);
    }
    return s + "], keepdims=" + (keepdims_ ? "true" : "false");
  }

  TensorSpec infer(std::span<const TensorSpec> in) const override {
    if (in[0].dtype == DType::bool_) {
      throw TypeError(
          op_message(this->name(), "x is " + in[0].to_string() + "; cast bool to int32 or float32 before reducing"));
    }
    if (kReduction == Reduction::max) {
      for (int a : axes_) {
        if (in[0].shape[a] == 0) {
          throw ShapeError(op_message("max", "x is " + in[0].to_string() + ": axis " + std::to_string(a) +
                                                 " is empty, and the max of nothing is undefined"));
        }
      }
    }
    return {reduced_shape(in[0].shape, axes_, keepdims_), in[0].dtype};
  }

  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    kernels::cpu().reduce(in[0], out, axes_, kReduction);
  }
  // The kernel reads bfloat16 as float32 and rounds the result once, as widening would.
  bool handles_bfloat16() const override { return true; }

  std::vector<Tensor> vjp(const VjpArgs& v) const override {
    if (!v.wanted[0]) return {Tensor()};
    const Tensor& x = v.primals[0];
    Shape kept = reduced_shape(x.shape(), axes_, true);
    Tensor g = ops::broadcast_to(ops::reshape(v.cotangent, kept), x.shape());
    if (kReduction == Reduction::sum) return {g};
    // Max: the gradient is shared equally among the elements that equal the maximum.
    Tensor is_max = ops::equal(x, ops::broadcast_to(ops::reshape(v.output, kept), x.shape()));
    Tensor count = ops::sum(ops::cast(is_max, x.dtype()), {.axes = axes_, .keepdims = true});
    return {ops::where(is_max, ops::divide(g, count), ops::scalar_like(g, 0.0))};
  }

 private:
  std::vector<int> axes_;
  bool keepdims_;
};

template <Reduction kReduction>
Tensor reduce(const Tensor& x, const ops::ReduceOptions& options, const char* op) {
  if (!x.defined()) throw ValueError(op_message(op, "x is an undefined tensor"));
  return detail::apply_new<Reduce<kReduction>>({x}, normalize_axes(options.axes, x.rank(), op), options.keepdims);
}

}  // namespace

namespace ops {

Tensor sum(const Tensor& x, const ReduceOptions& options) { return reduce<Reduction::sum>(x, options, "sum"); }
Tensor max(const Tensor& x, const ReduceOptions& options) { return reduce<Reduction::max>(x, options, "max"); }

Tensor mean(const Tensor& x, const ReduceOptions& options) {
  if (!x.defined()) throw ValueError(op_message("mean", "x is an undefined tensor"));
  if (!is_floating(x.dtype())) {
    throw TypeError(op_message("mean", "x is " + x.spec().to_string() + "; cast it to float32 first"));
  }
  std::int64_t count = 1;
  for (int axis : normalize_axes(options.axes, x.rank(), "mean")) count *= x.shape()[axis];
  return multiply(sum(x, options), scalar_like(x, 1.0 / static_cast<double>(std::max<std::int64_t>(count, 1))));
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  const int lead = x.rank() - shape.rank();
  if (lead < 0) {
    throw ShapeError(
        op_message("sum_to", "cannot sum " + x.shape().to_string() + " to the larger rank of " + shape.to_string()));
  }
  std::vector<int> axes;
  for (int d = 0; d < x.rank(); ++d) {
    if (d < lead) {
      axes.push_back(d);
    } else if (shape[d - lead] == 1 && x.shape()[d] != 1) {
      axes.push_back(d);
    } else if (shape[d - lead] != x.shape()[d]) {
      throw ShapeError(op_message("sum_to", x.shape().to_string() + " does not broadcast from " + shape.to_string()));
    }
  }
  return reshape(sum(x, {.axes = axes, .keepdims = false}), shape);
}

}  // namespace ops
}  // namespace kestrel
