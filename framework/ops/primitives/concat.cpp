// concat: joins tensors of one dtype along an axis.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/thread_pool.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/primitive.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::ops {
namespace {

class Concat final : public PrimitiveOf<Concat, OpId::concat> {
 public:
  explicit Concat(int axis) : axis_(axis) {}
  auto fields() const { return std::tie(axis_); }

  TensorSpec infer(std::span<const TensorSpec> in) const override {
    if (in.empty()) throw ValueError(op_message("concat", "no inputs; pass at least one tensor"));
    const TensorSpec& first = in[0];
    if (first.shape.rank() == 0) {
      throw ShapeError(op_message("concat", "xs[0] is " + first.to_string() +
                                                ", a scalar; concat needs tensors of rank >= 1 (expand_dims first)"));
    }
    if (axis_ < 0 || axis_ >= first.shape.rank()) {
      throw ShapeError(
          op_message("concat", "axis " + std::to_string(axis_) + " is out of range for xs[0] " + first.to_string()));
    }
    Shape out = first.shape;
    for (std::size_t i = 1; i < in.size(); ++i) {
      const TensorSpec& x = in[i];
      std::string which = "xs[" + std::to_string(i) + "] is " + x.to_string() + " but xs[0] is " + first.to_string();
      if (x.dtype != first.dtype) {
        throw TypeError(op_message("concat", which + "; all inputs need the same dtype (convert with ops::cast)"));
      }
      if (x.shape.rank() != first.shape.rank()) {
        throw ShapeError(op_message("concat", which + ": ranks differ; all inputs need the same rank"));
      }
      for (int d = 0; d < x.shape.rank(); ++d) {
        if (d != axis_ && x.shape[d] != first.shape[d]) {
          throw ShapeError(
              op_message("concat", which + ": dim " + std::to_string(d) + " differs (" + std::to_string(x.shape[d]) +
                                       " vs " + std::to_string(first.shape[d]) + "); all dims except the concat axis " +
                                       std::to_string(axis_) + " must match"));
        }
      }
      out[axis_] += x.shape[axis_];
    }
    return {out, first.dtype};
  }

  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    if (out.numel() == 0) return;
    const std::size_t elem = size_of(out.dtype);
    std::int64_t outer = 1;
    for (int d = 0; d < axis_; ++d) outer *= out.shape[d];
    // Per outer index, each input contributes one contiguous chunk to one contiguous output row.
    const std::int64_t n = static_cast<std::int64_t>(in.size());
    std::vector<std::size_t> chunk(in.size()), prefix(in.size());
    std::size_t row = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
      std::int64_t numel = in[i].numel();
      chunk[i] = outer == 0 ? 0 : static_cast<std::size_t>(numel / outer) * elem;
      prefix[i] = row;
      row += chunk[i];
    }
    auto* dst = static_cast<std::uint8_t*>(out.data);
    std::int64_t grain =
        std::max<std::int64_t>(1, kCopyGrainBytes * n / static_cast<std::int64_t>(std::max<std::size_t>(row, 1)));
    parallel_for(outer * n, grain, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t task = begin; task < end; ++task) {
        std::int64_t o = task / n;
        auto i = static_cast<std::size_t>(task % n);
        if (chunk[i] == 0) continue;
        const auto* src = static_cast<const std::uint8_t*>(in[i].data);
        std::memcpy(dst + static_cast<std::size_t>(o) * row + prefix[i], src + static_cast<std::size_t>(o) * chunk[i],
                    chunk[i]);
      }
    });
  }

  std::vector<Tensor> vjp(const VjpArgs& a) const override {
    std::vector<Tensor> grads(a.primals.size());
    std::int64_t offset = 0;
    for (std::size_t i = 0; i < a.primals.size(); ++i) {
      const Shape& shape = a.primals[i].shape();
      if (a.wanted[i] && is_floating(a.primals[i].dtype())) {
        std::vector<std::int64_t> begin(static_cast<std::size_t>(shape.rank()), 0);
        begin[static_cast<std::size_t>(axis_)] = offset;
        grads[i] = slice(a.cotangent, begin, shape.to_vector());
      }
      offset += shape[axis_];
    }
    return grads;
  }

  std::string params() const override { return "axis=" + std::to_string(axis_); }
  bool handles_bfloat16() const override { return true; }

 private:
  int axis_;
};

}  // namespace

Tensor concat(const std::vector<Tensor>& xs, int axis) {
  if (xs.empty()) throw ValueError(op_message("concat", "xs is empty; pass at least one tensor"));
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (!xs[i].defined()) {
      throw ValueError(
          op_message("concat", "xs[" + std::to_string(i) + "] is an undefined tensor; pass tensors with values"));
    }
  }
  if (xs[0].rank() == 0) {
    throw ShapeError(op_message("concat", "xs[0] is " + xs[0].spec().to_string() +
                                              ", a scalar; concat needs tensors of rank >= 1 (expand_dims first)"));
  }
  int a = normalize_axis(axis, xs[0].rank(), "concat");
  if (xs.size() == 1) return xs[0];
  return detail::apply_new<Concat>(xs, a);
}

}  // namespace kestrel::ops
