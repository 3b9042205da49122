// reshape: same data, new shape. A view: the dispatcher shares the input's buffer, so eager
// reshapes cost nothing; eval_cpu copies only when a compiled program gives the output its own memory.
// expand_dims and squeeze are reshapes with friendlier arguments.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/primitive.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::ops {
namespace {

class Reshape final : public PrimitiveOf<Reshape, OpId::reshape> {
 public:
  explicit Reshape(Shape shape) : shape_(shape) {}
  auto fields() const { return std::tie(shape_); }

  TensorSpec infer(std::span<const TensorSpec> in) const override {
    if (in[0].shape.numel() != shape_.numel()) {
      throw ShapeError(op_message("reshape", "cannot reshape " + in[0].to_string() + " (" +
                                                 std::to_string(in[0].shape.numel()) + " elements) to " +
                                                 shape_.to_string() + " (" + std::to_string(shape_.numel()) +
                                                 " elements); the element counts must match"));
    }
    return {shape_, in[0].dtype};
  }

  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    std::size_t bytes = static_cast<std::size_t>(out.numel()) * size_of(out.dtype);
    if (bytes != 0 && in[0].data != out.data) std::memcpy(out.data, in[0].data, bytes);
  }

  std::vector<Tensor> vjp(const VjpArgs& a) const override {
    if (!a.wanted[0]) return {Tensor()};
    return {reshape(a.cotangent, a.primals[0].shape())};
  }

  std::string params() const override { return "shape=" + shape_.to_string(); }
  bool is_view() const override { return true; }
  bool handles_bfloat16() const override { return true; }

 private:
  Shape shape_;
};

Tensor reshape_to(const Tensor& x, const Shape& shape) {
  if (!x.defined()) {
    throw ValueError(op_message("reshape", "x is an undefined tensor; pass a tensor with a value"));
  }
  // Same shape: the tensor itself already is the answer, and skipping the node keeps graphs small.
  if (x.shape() == shape) return x;
  return detail::apply_new<Reshape>({x}, shape);
}

}  // namespace

Tensor reshape(const Tensor& x, const std::vector<std::int64_t>& shape) {
  if (!x.defined()) {
    throw ValueError(op_message("reshape", "x is an undefined tensor; pass a tensor with a value"));
  }
  if (shape.size() > static_cast<std::size_t>(Shape::kMaxRank)) {
    throw ShapeError(op_message("reshape", "shape " + dims_to_string(shape) + " has rank " +
                                               std::to_string(shape.size()) + "; Kestrel's maximum rank is " +
                                               std::to_string(Shape::kMaxRank)));
  }
  int inferred = -1;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (inferred >= 0) {
        throw ValueError(op_message(
            "reshape", "shape " + dims_to_string(shape) + " has more than one -1; at most one dim can be inferred"));
      }
      inferred = static_cast<int>(i);
    } else if (shape[i] < 0) {
      throw ValueError(op_message("reshape", "shape " + dims_to_string(shape) + " has dim " + std::to_string(shape[i]) +
                                                 " at position " + std::to_string(i) +
                                                 "; dims must be >= 0, or -1 to infer one"));
    } else {
      known *= shape[i];
    }
  }
  std::vector<std::int64_t> dims = shape;
  if (inferred >= 0) {
    std::int64_t numel = x.numel();
    if (known == 0 || numel % known != 0) {
      throw ShapeError(op_message(
          "reshape",
          "cannot reshape " + x.spec().to_string() + " (" + std::to_string(numel) + " elements) to " +
              dims_to_string(shape) + ": the other dims multiply to " + std::to_string(known) +
              (known == 0 ? ", so the -1 cannot be inferred" : ", which does not divide " + std::to_string(numel))));
    }
    dims[static_cast<std::size_t>(inferred)] = numel / known;
  }
  return reshape_to(x, Shape(dims));
}

Tensor reshape(const Tensor& x, std::initializer_list<std::int64_t> shape) {
  return reshape(x, std::vector<std::int64_t>(shape));
}

Tensor reshape(const Tensor& x, const Shape& shape) { return reshape_to(x, shape); }

Tensor expand_dims(const Tensor& x, int axis) {
  if (!x.defined()) {
    throw ValueError(op_message("expand_dims", "x is an undefined tensor; pass a tensor with a value"));
  }
  if (x.rank() >= Shape::kMaxRank) {
    throw ShapeError(op_message("expand_dims", "x is " + x.spec().to_string() +
                                                   "; adding an axis would exceed Kestrel's maximum rank " +
                                                   std::to_string(Shape::kMaxRank)));
  }
  int at = normalize_axis(axis, x.rank() + 1, "expand_dims");
  std::vector<std::int64_t> dims = x.shape().to_vector();
  dims.insert(dims.begin() + at, 1);
  return reshape_to(x, Shape(dims));
}

Tensor squeeze(const Tensor& x, const std::vector<int>& axes) {
  if (!x.defined()) {
    throw ValueError(op_message("squeeze", "x is an undefined tensor; pass a tensor with a value"));
  }
  const Shape& shape = x.shape();
  if (shape.rank() == 0 && !axes.empty()) {
    throw ShapeError(op_message("squeeze", "x is " + x.spec().to_string() + ", a scalar: it has no axes to squeeze"));
  }
  std::vector<bool> drop(static_cast<std::size_t>(shape.rank()), false);
  if (axes.empty()) {
    for (int i = 0; i < shape.rank(); ++i) drop[static_cast<std::size_t>(i)] = shape[i] == 1;
  }
  for (int axis : axes) {
    int a = normalize_axis(axis, shape.rank(), "squeeze");
    if (shape[a] != 1) {
      throw ShapeError(op_message("squeeze", "cannot squeeze axis " + std::to_string(axis) + " of " +
                                                 x.spec().to_string() + ": its size is " + std::to_string(shape[a]) +
                                                 ", not 1; only size-1 axes can be removed"));
    }
    drop[static_cast<std::size_t>(a)] = true;
  }
  std::vector<std::int64_t> dims;
  for (int i = 0; i < shape.rank(); ++i) {
    if (!drop[static_cast<std::size_t>(i)]) dims.push_back(shape[i]);
  }
  return reshape_to(x, Shape(dims));
}

}  // namespace kestrel::ops

namespace kestrel {
std::shared_ptr<const Primitive> detail::reshape_primitive(const Shape& shape) {
  return std::make_shared<const ops::Reshape>(shape);
}
}  // namespace kestrel
