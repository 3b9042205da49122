// argmax: the index of the largest element along one axis, as int64. Metrics (accuracy, top-k)
// compare it with labels; its output is integer, so nothing differentiates through it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>

#include "framework/core/error.h"
#include "framework/core/thread_pool.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/primitive.h"
#include "framework/ops/reduce.h"

namespace kestrel {
namespace {

constexpr std::int64_t kGrainElements = 1 << 15;

// True when a beats the best so far: strictly larger, or the first NaN (NumPy's rule, so a
// NaN prediction is visible in the index instead of silently losing to finite values).
template <class T>
bool beats(T a, T best) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(best)) return false;
    if (std::isnan(a)) return true;
  }
  return a > best;
}

/// Argmax over the middle axis of an [outer, length, inner] view into [outer, inner].
template <class T>
void argmax_kernel(const T* in, std::int64_t* out, std::int64_t outer, std::int64_t length, std::int64_t inner) {
  const std::int64_t grain = std::max<std::int64_t>(1, kGrainElements / std::max<std::int64_t>(1, length * inner));
  parallel_for(outer, grain, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t o = lo; o < hi; ++o) {
      const T* block = in + o * length * inner;
      std::int64_t* dst = out + o * inner;
      for (std::int64_t i = 0; i < inner; ++i) {
        std::int64_t best_index = 0;
        T best = block[i];
        for (std::int64_t l = 1; l < length; ++l) {
          const T v = block[l * inner + i];
          if (beats(v, best)) {
            best = v;
            best_index = l;
          }
        }
        dst[i] = best_index;
      }
    }
  });
}

class Argmax final : public PrimitiveOf<Argmax, OpId::argmax> {
 public:
  explicit Argmax(int axis) : axis_(axis) {}
  auto fields() const { return std::tie(axis_); }
  std::string params() const override { return "axis=" + std::to_string(axis_); }

  TensorSpec infer(std::span<const TensorSpec> in) const override {
    const TensorSpec& x = in[0];
    if (x.dtype == DType::bool_) {
      throw TypeError(op_message("argmax", "x is " + x.to_string() + "; cast bool to int32 or float32 first"));
    }
    if (x.shape[axis_] == 0) {
      throw ShapeError(op_message("argmax", "x is " + x.to_string() + ": axis " + std::to_string(axis_) +
                                                " is empty, and the largest of nothing has no index"));
    }
    Shape out;
    for (int d = 0; d < x.shape.rank(); ++d) {
      if (d != axis_) out.push_back(x.shape[d]);
    }
    return {out, DType::int64};
  }

  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    const Shape& shape = in[0].shape;
    std::int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis_; ++d) outer *= shape[d];
    for (int d = axis_ + 1; d < shape.rank(); ++d) inner *= shape[d];
    const std::int64_t length = shape[axis_];
    auto* dst = out.as<std::int64_t>();
    switch (in[0].dtype) {
      case DType::float32: return argmax_kernel(in[0].as<float>(), dst, outer, length, inner);
      case DType::int32: return argmax_kernel(in[0].as<std::int32_t>(), dst, outer, length, inner);
      case DType::int64: return argmax_kernel(in[0].as<std::int64_t>(), dst, outer, length, inner);
      case DType::bfloat16:  // widened by the dispatcher
      case DType::bool_:     // rejected by infer
        KESTREL_DCHECK(false);
        return;
    }
  }

  // An index does not change under small changes of x: there is no gradient.
  std::vector<Tensor> vjp(const VjpArgs& args) const override { return {Tensor()}; }

 private:
  int axis_;
};

}  // namespace

namespace ops {

Tensor argmax(const Tensor& x, int axis) {
  if (!x.defined()) throw ValueError(op_message("argmax", "x is an undefined tensor"));
  if (x.rank() == 0) {
    throw ShapeError(op_message("argmax", "x is " + x.spec().to_string() + ", a scalar; it needs an axis to search"));
  }
  return detail::apply_new<Argmax>({x}, normalize_axis(axis, x.rank(), "argmax"));
}

}  // namespace ops
}  // namespace kestrel
