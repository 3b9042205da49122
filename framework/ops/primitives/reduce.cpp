// Reductions over axes (sum, max), and the composites built on them (mean, sum_to).
#include <algorithm>
#include <limits>
#include <string>
#include <tuple>
#include <Eigen/Core>

#include "framework/core/error.h"
#include "framework/core/thread_pool.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/shape_ops.h"

namespace kestrel {
namespace {

enum class Reduction { sum, max };

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

template <class T>
T identity(Reduction r) {
  if (r == Reduction::sum) return T(0);
  return std::numeric_limits<T>::lowest();
}

/// Reduces the middle axis of a [outer, length, inner] view into [outer, inner].
template <class T>
void reduce_middle(const T* in, T* out, std::int64_t outer, std::int64_t length, std::int64_t inner, Reduction r) {
  const std::int64_t grain = std::max<std::int64_t>(1, (1 << 15) / std::max<std::int64_t>(1, length * inner));
  if (inner == 1) {
    // Row reductions: Eigen's vectorized partial sums keep float error low over long rows.
    parallel_for(outer, grain, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t o = lo; o < hi; ++o) {
        Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> row(in + o * length, length);
        out[o] = length == 0 ? identity<T>(r) : (r == Reduction::sum ? row.sum() : row.maxCoeff());
      }
    });
    return;
  }
  // Column reductions: accumulate whole rows so the inner loop runs over contiguous memory.
  parallel_for(outer, grain, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t o = lo; o < hi; ++o) {
      T* acc = out + o * inner;
      std::fill(acc, acc + inner, identity<T>(r));
      for (std::int64_t l = 0; l < length; ++l) {
        const T* row = in + (o * length + l) * inner;
        if (r == Reduction::sum) {
          for (std::int64_t i = 0; i < inner; ++i) acc[i] += row[i];
        } else {
          for (std::int64_t i = 0; i < inner; ++i) acc[i] = std::max(acc[i], row[i]);
        }
      }
    }
  });
}

/// Reduces the given axes of `in` into `out`, one contiguous run of reduced axes at a time,
/// innermost first, through temporaries.
template <class T>
void reduce_axes(const TensorView& in, const TensorView& out, const std::vector<int>& axes, Reduction r) {
  std::vector<std::int64_t> dims = in.shape.to_vector();
  std::vector<bool> reduced(dims.size(), false);
  for (int a : axes) reduced[static_cast<std::size_t>(a)] = true;

  std::vector<T> scratch_a, scratch_b;
  const T* src = in.as<T>();
  int d = static_cast<int>(dims.size()) - 1;
  bool wrote_output = false;
  while (d >= 0) {
    if (!reduced[static_cast<std::size_t>(d)]) {
      --d;
      continue;
    }
    int end = d;  // reduced run [start, end]
    while (d >= 0 && reduced[static_cast<std::size_t>(d)]) --d;
    int start = d + 1;
    std::int64_t outer = 1, length = 1, inner = 1;
    for (int i = 0; i < start; ++i) outer *= dims[static_cast<std::size_t>(i)];
    for (int i = start; i <= end; ++i) length *= dims[static_cast<std::size_t>(i)];
    for (std::size_t i = static_cast<std::size_t>(end) + 1; i < dims.size(); ++i) inner *= dims[i];
    bool last_run = true;
    for (int i = 0; i < start; ++i) last_run &= !reduced[static_cast<std::size_t>(i)];
    T* dst;
    if (last_run) {
      dst = out.as<T>();
      wrote_output = true;
    } else {
      std::vector<T>& buf = (src == scratch_a.data()) ? scratch_b : scratch_a;
      buf.resize(static_cast<std::size_t>(outer * inner));
      dst = buf.data();
    }
    reduce_middle<T>(src, dst, outer, length, inner, r);
    src = dst;
    for (int i = start; i <= end; ++i) dims[static_cast<std::size_t>(i)] = 1;
  }
  if (!wrote_output) {
    // No axes to reduce: the output is the input.
    std::copy(in.as<T>(), in.as<T>() + in.numel(), out.as<T>());
  }
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
      throw TypeError(op_message(this->name(), "x is " + in[0].to_string() +
                                                   "; cast bool to int32 or float32 before reducing"));
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
    switch (in[0].dtype) {
      case DType::float32: return reduce_axes<float>(in[0], out, axes_, kReduction);
      case DType::int32: return reduce_axes<std::int32_t>(in[0], out, axes_, kReduction);
      case DType::int64: return reduce_axes<std::int64_t>(in[0], out, axes_, kReduction);
      default: KESTREL_DCHECK(false);
    }
  }

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
    throw ShapeError(op_message("sum_to", "cannot sum " + x.shape().to_string() + " to the larger rank of " +
                                              shape.to_string()));
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
