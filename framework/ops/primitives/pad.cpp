// pad: surrounds x with (before, after) elements of a constant on each axis.
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

std::string paddings_to_string(const std::vector<std::int64_t>& before, const std::vector<std::int64_t>& after) {
  std::string out = "[";
  for (std::size_t i = 0; i < before.size(); ++i) {
    if (i) out += ", ";
    out.append("(").append(std::to_string(before[i])).append(", ").append(std::to_string(after[i])).append(")");
  }
  return out + "]";
}

// The padding value in dtype's representation, as raw element bits.
template <class Bits>
Bits constant_bits(double value, DType dtype) {
  Bits bits{};
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T v{};
    if constexpr (std::is_same_v<T, bfloat16>) {
      v = bfloat16(static_cast<float>(value));
    } else if constexpr (std::is_same_v<T, bool>) {
      v = value != 0.0;
    } else {
      v = static_cast<T>(value);
    }
    // Only the dtype whose size matches Bits is ever asked for; the others compile to nothing.
    if constexpr (sizeof(T) == sizeof(Bits)) std::memcpy(&bits, &v, sizeof(T));
  });
  return bits;
}

struct PadGeometry {
  std::vector<std::int64_t> in_dims, before, after;
};

template <class T>
void pad_kernel(const T* src, T* dst, const PadGeometry& g, T fill) {
  const int rank = static_cast<int>(g.in_dims.size());
  // Trailing axes without padding join the row; axis k is the last one that may be padded.
  int k = rank - 1;
  std::int64_t tail = 1;
  while (k > 0 && g.before[static_cast<std::size_t>(k)] == 0 && g.after[static_cast<std::size_t>(k)] == 0) {
    tail *= g.in_dims[static_cast<std::size_t>(k)];
    --k;
  }
  const auto uk = static_cast<std::size_t>(k);
  const std::int64_t lead = g.before[uk] * tail;
  const std::int64_t body = g.in_dims[uk] * tail;
  const std::int64_t trail = g.after[uk] * tail;
  const std::int64_t row = lead + body + trail;

  // Outer axes [0, k): output dims, and each one's stride in the input.
  std::vector<std::int64_t> out_dims, in_strides(static_cast<std::size_t>(k), 0);
  std::int64_t rows = 1;
  for (int d = 0; d < k; ++d) {
    auto ud = static_cast<std::size_t>(d);
    out_dims.push_back(g.before[ud] + g.in_dims[ud] + g.after[ud]);
    rows *= out_dims.back();
  }
  std::int64_t stride = body;
  for (int d = k - 1; d >= 0; --d) {
    in_strides[static_cast<std::size_t>(d)] = stride;
    stride *= g.in_dims[static_cast<std::size_t>(d)];
  }
  std::int64_t grain = std::max<std::int64_t>(
      1, kCopyGrainBytes / static_cast<std::int64_t>(std::max<std::int64_t>(row, 1) * sizeof(T)));

  parallel_for(rows, grain, [&](std::int64_t begin, std::int64_t end) {
    std::vector<std::int64_t> index(static_cast<std::size_t>(k), 0);
    std::int64_t rest = begin;
    for (int d = k - 1; d >= 0; --d) {
      auto ud = static_cast<std::size_t>(d);
      index[ud] = rest % out_dims[ud];
      rest /= out_dims[ud];
    }
    for (std::int64_t r = begin; r < end; ++r) {
      T* out_row = dst + r * row;
      bool interior = true;
      std::int64_t in_offset = 0;
      for (int d = 0; d < k && interior; ++d) {
        auto ud = static_cast<std::size_t>(d);
        std::int64_t i = index[ud] - g.before[ud];
        interior = i >= 0 && i < g.in_dims[ud];
        in_offset += i * in_strides[ud];
      }
      if (interior) {
        std::fill(out_row, out_row + lead, fill);
        std::memcpy(out_row + lead, src + in_offset, static_cast<std::size_t>(body) * sizeof(T));
        std::fill(out_row + lead + body, out_row + row, fill);
      } else {
        std::fill(out_row, out_row + row, fill);
      }
      for (int d = k - 1; d >= 0; --d) {
        auto ud = static_cast<std::size_t>(d);
        if (++index[ud] < out_dims[ud]) break;
        index[ud] = 0;
      }
    }
  });
}

class Pad final : public PrimitiveOf<Pad, OpId::pad> {
 public:
  Pad(std::vector<std::int64_t> before, std::vector<std::int64_t> after, double constant_value)
      : before_(std::move(before)), after_(std::move(after)), constant_value_(constant_value) {}
  auto fields() const { return std::tie(before_, after_, constant_value_); }

  TensorSpec infer(std::span<const TensorSpec> in) const override {
    const Shape& x = in[0].shape;
    const auto rank = static_cast<std::size_t>(x.rank());
    if (before_.size() != rank || after_.size() != rank) {
      throw ShapeError(
          op_message("pad", "x is " + in[0].to_string() + " but paddings has " + std::to_string(before_.size()) +
                                " pairs; pass one (before, after) pair per axis (" + std::to_string(rank) + ")"));
    }
    Shape out;
    for (std::size_t d = 0; d < rank; ++d) {
      if (before_[d] < 0 || after_[d] < 0) {
        throw ValueError(op_message("pad", "paddings " + paddings_to_string(before_, after_) +
                                               " has a negative entry on axis " + std::to_string(d) +
                                               "; paddings must be >= 0 (use ops::slice to crop)"));
      }
      out.push_back(before_[d] + x[static_cast<int>(d)] + after_[d]);
    }
    return {out, in[0].dtype};
  }

  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    if (out.numel() == 0) return;
    if (in[0].shape.rank() == 0) {
      std::memcpy(out.data, in[0].data, size_of(out.dtype));
      return;
    }
    PadGeometry g{in[0].shape.to_vector(), before_, after_};
    // Elements are moved, never interpreted: dispatch on their size, not their dtype.
    switch (size_of(out.dtype)) {
      case 1:
        pad_kernel(in[0].as<std::uint8_t>(), out.as<std::uint8_t>(), g,
                   constant_bits<std::uint8_t>(constant_value_, out.dtype));
        break;
      case 2:
        pad_kernel(in[0].as<std::uint16_t>(), out.as<std::uint16_t>(), g,
                   constant_bits<std::uint16_t>(constant_value_, out.dtype));
        break;
      case 4:
        pad_kernel(in[0].as<std::uint32_t>(), out.as<std::uint32_t>(), g,
                   constant_bits<std::uint32_t>(constant_value_, out.dtype));
        break;
      default:
        pad_kernel(in[0].as<std::uint64_t>(), out.as<std::uint64_t>(), g,
                   constant_bits<std::uint64_t>(constant_value_, out.dtype));
        break;
    }
  }

  std::vector<Tensor> vjp(const VjpArgs& a) const override {
    if (!a.wanted[0] || !is_floating(a.primals[0].dtype())) return {Tensor()};
    return {slice(a.cotangent, before_, a.primals[0].shape().to_vector())};
  }

  std::string params() const override {
    return "paddings=" + paddings_to_string(before_, after_) + ", constant_value=" + std::to_string(constant_value_);
  }
  bool handles_bfloat16() const override { return true; }

 private:
  std::vector<std::int64_t> before_;
  std::vector<std::int64_t> after_;
  double constant_value_;
};

}  // namespace

Tensor pad(const Tensor& x, const std::vector<std::pair<std::int64_t, std::int64_t>>& paddings, double constant_value) {
  if (!x.defined()) {
    throw ValueError(op_message("pad", "x is an undefined tensor; pass a tensor with a value"));
  }
  std::vector<std::int64_t> before, after;
  bool nothing = true;
  for (const auto& [b, e] : paddings) {
    before.push_back(b);
    after.push_back(e);
    nothing = nothing && b == 0 && e == 0;
  }
  if (nothing && paddings.size() == static_cast<std::size_t>(x.rank())) return x;
  return detail::apply_new<Pad>({x}, std::move(before), std::move(after), constant_value);
}

}  // namespace kestrel::ops
