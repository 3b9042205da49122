// one_hot: integer labels [...] -> [..., depth] rows of off_value with on_value at the label.
// As in TF, a label outside [0, depth) (e.g. the -100 of ignored tokens) gives an all-off row.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/thread_pool.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/primitive.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::ops {
namespace {

template <class T>
T convert(double value) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    return bfloat16(static_cast<float>(value));
  } else if constexpr (std::is_same_v<T, bool>) {
    return value != 0.0;
  } else {
    return static_cast<T>(value);
  }
}

template <class T, class I>
void one_hot_kernel(const I* labels, T* out, std::int64_t count, std::int64_t depth, T on, T off) {
  std::int64_t grain = std::max<std::int64_t>(
      1, kCopyGrainBytes / std::max<std::int64_t>(1, depth * static_cast<std::int64_t>(sizeof(T))));
  parallel_for(count, grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      T* row = out + i * depth;
      std::fill(row, row + depth, off);
      auto label = static_cast<std::int64_t>(labels[i]);
      if (label >= 0 && label < depth) row[label] = on;
    }
  });
}

class OneHot final : public PrimitiveOf<OneHot, OpId::one_hot> {
 public:
  OneHot(std::int64_t depth, DType dtype, double on_value, double off_value)
      : depth_(depth), dtype_(dtype), on_value_(on_value), off_value_(off_value) {}
  auto fields() const { return std::tie(depth_, dtype_, on_value_, off_value_); }

  TensorSpec infer(std::span<const TensorSpec> in) const override {
    if (in[0].dtype != DType::int32 && in[0].dtype != DType::int64) {
      throw TypeError(op_message(
          "one_hot", "indices is " + in[0].to_string() + "; indices must be int32 or int64 (convert with ops::cast)"));
    }
    if (depth_ < 0) {
      throw ValueError(op_message("one_hot", "depth is " + std::to_string(depth_) + "; depth must be >= 0"));
    }
    if (in[0].shape.rank() >= Shape::kMaxRank) {
      throw ShapeError(op_message("one_hot", "indices is " + in[0].to_string() +
                                                 "; adding the depth axis would exceed Kestrel's maximum rank " +
                                                 std::to_string(Shape::kMaxRank)));
    }
    Shape out = in[0].shape;
    out.push_back(depth_);
    return {out, dtype_};
  }

  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    if (out.numel() == 0) return;
    const std::int64_t count = in[0].numel();
    visit_dtype(out.dtype, [&](auto tag) {
      using T = decltype(tag);
      T on = convert<T>(on_value_);
      T off = convert<T>(off_value_);
      if (in[0].dtype == DType::int32) {
        one_hot_kernel(in[0].as<std::int32_t>(), out.as<T>(), count, depth_, on, off);
      } else {
        one_hot_kernel(in[0].as<std::int64_t>(), out.as<T>(), count, depth_, on, off);
      }
    });
  }

  // The only input is integer labels: there is nothing to differentiate.
  std::vector<Tensor> vjp(const VjpArgs& a) const override { return {Tensor()}; }

  std::string params() const override {
    return "depth=" + std::to_string(depth_) + ", dtype=" + std::string(to_string(dtype_)) +
           ", on_value=" + std::to_string(on_value_) + ", off_value=" + std::to_string(off_value_);
  }
  bool handles_bfloat16() const override { return true; }

 private:
  std::int64_t depth_;
  DType dtype_;
  double on_value_;
  double off_value_;
};

}  // namespace

Tensor one_hot(const Tensor& indices, std::int64_t depth, const OneHotOptions& options) {
  if (!indices.defined()) {
    throw ValueError(op_message("one_hot", "indices is an undefined tensor; pass a tensor with a value"));
  }
  return detail::apply_new<OneHot>({indices}, depth, options.dtype, options.on_value, options.off_value);
}

}  // namespace kestrel::ops
