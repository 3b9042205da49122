// slice: the block of x starting at begin with the given size per axis, as tf.slice.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/thread_pool.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/primitive.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::ops {
namespace {

constexpr std::int64_t kGrainBytes = 1 << 15;

class Slice final : public PrimitiveOf<Slice, OpId::slice> {
 public:
  Slice(std::vector<std::int64_t> begin, std::vector<std::int64_t> size)
      : begin_(std::move(begin)), size_(std::move(size)) {}
  auto fields() const { return std::tie(begin_, size_); }

  TensorSpec infer(std::span<const TensorSpec> in) const override {
    const Shape& x = in[0].shape;
    const auto rank = static_cast<std::size_t>(x.rank());
    if (begin_.size() != rank || size_.size() != rank) {
      throw ShapeError(op_message("slice", "x is " + in[0].to_string() + " but begin is " + dims_to_string(begin_) +
                                               " and size is " + dims_to_string(size_) +
                                               "; both need one entry per axis (" + std::to_string(rank) + ")"));
    }
    Shape out;
    for (std::size_t d = 0; d < rank; ++d) {
      std::int64_t dim = x[static_cast<int>(d)];
      std::string at = "[]";
      at.insert(1, std::to_string(d));  // appending, not "[" + ...: GCC 12 warns falsely on the latter
      if (begin_[d] < 0 || begin_[d] > dim) {
        throw IndexError(op_message(
            "slice", "begin" + at + " = " + std::to_string(begin_[d]) + " is out of range for x " + in[0].to_string() +
                         ": axis " + std::to_string(d) + " needs begin in [0, " + std::to_string(dim) + "]"));
      }
      if (size_[d] < 0) {
        throw ValueError(op_message("slice", "size" + at + " = " + std::to_string(size_[d]) +
                                                 "; sizes must be >= 0, or -1 for everything after begin"));
      }
      if (begin_[d] + size_[d] > dim) {
        throw IndexError(op_message(
            "slice", "begin" + at + " + size" + at + " = " + std::to_string(begin_[d]) + " + " +
                         std::to_string(size_[d]) + " = " + std::to_string(begin_[d] + size_[d]) + " exceeds axis " +
                         std::to_string(d) + " of x " + in[0].to_string() + " (size " + std::to_string(dim) + ")"));
      }
      out.push_back(size_[d]);
    }
    return {out, in[0].dtype};
  }

  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    if (out.numel() == 0) return;
    const std::size_t elem = size_of(out.dtype);
    const auto* src = static_cast<const std::uint8_t*>(in[0].data);
    auto* dst = static_cast<std::uint8_t*>(out.data);
    const int rank = in[0].shape.rank();
    if (rank == 0) {
      std::memcpy(dst, src, elem);
      return;
    }
    std::vector<std::int64_t> strides = in[0].shape.strides();
    std::int64_t base = 0;
    for (int d = 0; d < rank; ++d) base += begin_[static_cast<std::size_t>(d)] * strides[static_cast<std::size_t>(d)];
    // Axes taken whole at the end join the innermost contiguous run.
    int k = rank - 1;
    std::int64_t run = size_.back();
    while (k > 0 && size_[static_cast<std::size_t>(k)] == in[0].shape[k]) {
      --k;
      run *= size_[static_cast<std::size_t>(k)];
    }
    std::vector<std::int64_t> outer_dims(size_.begin(), size_.begin() + k);
    std::vector<std::int64_t> outer_strides(strides.begin(), strides.begin() + k);
    const std::size_t run_bytes = static_cast<std::size_t>(run) * elem;
    std::int64_t grain = std::max<std::int64_t>(1, kGrainBytes / static_cast<std::int64_t>(run_bytes));

    parallel_for(out.numel() / run, grain, [&](std::int64_t begin, std::int64_t end) {
      std::vector<std::int64_t> index(outer_dims.size(), 0);
      std::int64_t offset = 0;
      std::int64_t rest = begin;
      for (std::size_t d = outer_dims.size(); d-- > 0;) {
        index[d] = rest % outer_dims[d];
        rest /= outer_dims[d];
        offset += index[d] * outer_strides[d];
      }
      for (std::int64_t row = begin; row < end; ++row) {
        std::memcpy(dst + static_cast<std::size_t>(row) * run_bytes,
                    src + static_cast<std::size_t>(base + offset) * elem, run_bytes);
        for (std::size_t d = outer_dims.size(); d-- > 0;) {
          offset += outer_strides[d];
          if (++index[d] < outer_dims[d]) break;
          offset -= index[d] * outer_strides[d];
          index[d] = 0;
        }
      }
    });
  }

  std::vector<Tensor> vjp(const VjpArgs& a) const override {
    if (!a.wanted[0] || !is_floating(a.primals[0].dtype())) return {Tensor()};
    const Shape& x = a.primals[0].shape();
    std::vector<std::pair<std::int64_t, std::int64_t>> paddings;
    for (std::size_t d = 0; d < begin_.size(); ++d) {
      paddings.emplace_back(begin_[d], x[static_cast<int>(d)] - begin_[d] - size_[d]);
    }
    return {pad(a.cotangent, paddings)};
  }

  std::string params() const override { return "begin=" + dims_to_string(begin_) + ", size=" + dims_to_string(size_); }
  bool handles_bfloat16() const override { return true; }

 private:
  std::vector<std::int64_t> begin_;
  std::vector<std::int64_t> size_;
};

}  // namespace

Tensor slice(const Tensor& x, const std::vector<std::int64_t>& begin, const std::vector<std::int64_t>& size) {
  if (!x.defined()) {
    throw ValueError(op_message("slice", "x is an undefined tensor; pass a tensor with a value"));
  }
  std::vector<std::int64_t> resolved = size;
  const bool one_per_axis = begin.size() == static_cast<std::size_t>(x.rank()) && size.size() == begin.size();
  bool whole = one_per_axis;
  for (std::size_t d = 0; one_per_axis && d < size.size(); ++d) {
    std::int64_t dim = x.shape()[static_cast<int>(d)];
    // -1 means "to the end"; a begin outside the axis is left for infer() to report.
    if (size[d] == -1 && begin[d] >= 0 && begin[d] <= dim) resolved[d] = dim - begin[d];
    whole = whole && begin[d] == 0 && resolved[d] == dim;
  }
  if (whole) return x;
  return detail::apply_new<Slice>({x}, begin, std::move(resolved));
}

Tensor slice_rows(const Tensor& x, std::int64_t begin, std::int64_t end) {
  if (!x.defined()) return x;
  if (x.rank() == 0) throw ShapeError(op_message("slice", "x is a scalar; slice_rows needs a first axis to slice"));
  std::vector<std::int64_t> start(static_cast<std::size_t>(x.rank()), 0);
  std::vector<std::int64_t> size(static_cast<std::size_t>(x.rank()), -1);
  start[0] = begin;
  size[0] = end - begin;
  return slice(x, start, size);
}

}  // namespace kestrel::ops
