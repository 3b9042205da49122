// broadcast_to: repeats x along its size-1 (or missing leading) axes, NumPy rules.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/thread_pool.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/primitive.h"
#include "framework/ops/reduce.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::ops {
namespace {

constexpr std::int64_t kGrainBytes = 1 << 15;

// Output dims with adjacent axes of the same kind (all repeated, or all copied) merged, so the
// kernel's innermost loop is as long as possible. A stride of 0 marks a repeated axis.
struct Plan {
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> in_strides;
};

Plan make_plan(const Shape& in, const Shape& out) {
  Plan plan;
  int offset = out.rank() - in.rank();
  std::vector<std::int64_t> in_strides = in.strides();
  for (int d = 0; d < out.rank(); ++d) {
    if (out[d] == 1) continue;
    int id = d - offset;
    bool repeated = id < 0 || in[id] == 1;
    std::int64_t stride = repeated ? 0 : in_strides[static_cast<std::size_t>(id)];
    if (!plan.dims.empty()) {
      bool last_repeated = plan.in_strides.back() == 0;
      // Copied axes merge only when contiguous in the input; repeated axes always merge.
      if (repeated && last_repeated) {
        plan.dims.back() *= out[d];
        continue;
      }
      if (!repeated && !last_repeated && plan.in_strides.back() == stride * out[d]) {
        plan.dims.back() *= out[d];
        plan.in_strides.back() = stride;
        continue;
      }
    }
    plan.dims.push_back(out[d]);
    plan.in_strides.push_back(stride);
  }
  if (plan.dims.empty()) {
    plan.dims.push_back(1);
    plan.in_strides.push_back(1);
  }
  return plan;
}

template <class T>
void broadcast_kernel(const T* src, T* dst, const Plan& plan) {
  const int rank = static_cast<int>(plan.dims.size());
  const std::int64_t run = plan.dims.back();
  const bool repeat_inner = plan.in_strides.back() == 0;
  std::int64_t rows = 1;
  for (int d = 0; d + 1 < rank; ++d) rows *= plan.dims[static_cast<std::size_t>(d)];
  std::int64_t grain = std::max<std::int64_t>(1, kGrainBytes / static_cast<std::int64_t>(run * sizeof(T)));

  parallel_for(rows, grain, [&](std::int64_t begin, std::int64_t end) {
    // Multi-index of row `begin` over the outer axes, then an odometer from there.
    std::vector<std::int64_t> index(static_cast<std::size_t>(std::max(rank - 1, 0)), 0);
    std::int64_t in_offset = 0;
    std::int64_t rest = begin;
    for (int d = rank - 2; d >= 0; --d) {
      auto ud = static_cast<std::size_t>(d);
      index[ud] = rest % plan.dims[ud];
      rest /= plan.dims[ud];
      in_offset += index[ud] * plan.in_strides[ud];
    }
    for (std::int64_t row = begin; row < end; ++row) {
      T* out_row = dst + row * run;
      if (repeat_inner) {
        std::fill(out_row, out_row + run, src[in_offset]);
      } else {
        std::memcpy(out_row, src + in_offset, static_cast<std::size_t>(run) * sizeof(T));
      }
      for (int d = rank - 2; d >= 0; --d) {
        auto ud = static_cast<std::size_t>(d);
        in_offset += plan.in_strides[ud];
        if (++index[ud] < plan.dims[ud]) break;
        in_offset -= index[ud] * plan.in_strides[ud];
        index[ud] = 0;
      }
    }
  });
}

class BroadcastTo final : public PrimitiveOf<BroadcastTo, OpId::broadcast_to> {
 public:
  explicit BroadcastTo(Shape shape) : shape_(shape) {}
  auto fields() const { return std::tie(shape_); }

  TensorSpec infer(std::span<const TensorSpec> in) const override {
    const Shape& x = in[0].shape;
    if (x.rank() > shape_.rank()) {
      throw ShapeError(op_message("broadcast_to", "cannot broadcast " + in[0].to_string() + " to " +
                                                      shape_.to_string() + ": the target has fewer axes (" +
                                                      std::to_string(shape_.rank()) + " < " + std::to_string(x.rank()) +
                                                      ")"));
    }
    int offset = shape_.rank() - x.rank();
    for (int d = 0; d < x.rank(); ++d) {
      if (x[d] != 1 && x[d] != shape_[d + offset]) {
        throw ShapeError(op_message("broadcast_to", "cannot broadcast " + in[0].to_string() + " to " +
                                                        shape_.to_string() + ": axis " + std::to_string(d) +
                                                        " of x has size " + std::to_string(x[d]) +
                                                        " but the target has " + std::to_string(shape_[d + offset]) +
                                                        "; each dim of x must equal the target's or be 1"));
      }
    }
    return {shape_, in[0].dtype};
  }

  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    if (out.numel() == 0) return;
    Plan plan = make_plan(in[0].shape, out.shape);
    // Elements are moved, never interpreted: dispatch on their size, not their dtype.
    switch (size_of(out.dtype)) {
      case 1: broadcast_kernel(in[0].as<std::uint8_t>(), out.as<std::uint8_t>(), plan); break;
      case 2: broadcast_kernel(in[0].as<std::uint16_t>(), out.as<std::uint16_t>(), plan); break;
      case 4: broadcast_kernel(in[0].as<std::uint32_t>(), out.as<std::uint32_t>(), plan); break;
      default: broadcast_kernel(in[0].as<std::uint64_t>(), out.as<std::uint64_t>(), plan); break;
    }
  }

  std::vector<Tensor> vjp(const VjpArgs& a) const override {
    if (!a.wanted[0] || !is_floating(a.primals[0].dtype())) return {Tensor()};
    return {sum_to(a.cotangent, a.primals[0].shape())};
  }

  std::string params() const override { return "shape=" + shape_.to_string(); }
  bool handles_bfloat16() const override { return true; }

 private:
  Shape shape_;
};

}  // namespace

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  if (!x.defined()) {
    throw ValueError(op_message("broadcast_to", "x is an undefined tensor; pass a tensor with a value"));
  }
  if (x.shape() == shape) return x;
  return detail::apply_new<BroadcastTo>({x}, shape);
}

}  // namespace kestrel::ops
