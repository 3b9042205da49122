// gather and its transpose scatter_add: row lookups along an axis (embeddings) and the
// accumulation of gradients back into those rows.
//
// Both see params/output as [outer, n, inner] around the axis and indices as a flat list of K.
// The kernels are framework/ops/kernels/cpu/gather.cpp.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/kernels/cpu_kernels.h"
#include "framework/ops/primitive.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::ops {
namespace {

// params.shape[:axis] + indices.shape + params.shape[axis+1:], checked against the maximum rank.
Shape gathered_shape(const char* op, const Shape& params, const Shape& indices, int axis) {
  if (params.rank() - 1 + indices.rank() > Shape::kMaxRank) {
    throw ShapeError(op_message(op, "params " + params.to_string() + " with indices " + indices.to_string() +
                                        " would give a result of rank " +
                                        std::to_string(params.rank() - 1 + indices.rank()) +
                                        ", above Kestrel's maximum rank " + std::to_string(Shape::kMaxRank)));
  }
  Shape out;
  for (int d = 0; d < axis; ++d) out.push_back(params[d]);
  for (std::int64_t d : indices.dims()) out.push_back(d);
  for (int d = axis + 1; d < params.rank(); ++d) out.push_back(params[d]);
  return out;
}

void check_index_dtype(const char* op, const TensorSpec& indices) {
  if (indices.dtype != DType::int32 && indices.dtype != DType::int64) {
    throw TypeError(op_message(
        op, "indices is " + indices.to_string() + "; indices must be int32 or int64 (convert with ops::cast)"));
  }
}

void check_axis(const char* op, const char* what, const TensorSpec& spec, int axis) {
  if (axis < 0 || axis >= spec.shape.rank()) {
    throw ShapeError(
        op_message(op, "axis " + std::to_string(axis) + " is out of range for " + what + " " + spec.to_string()));
  }
}

// "indices[1,2]" for element `flat` of an indices tensor of `shape`.
std::string index_name(const Shape& shape, std::int64_t flat) {
  std::vector<std::int64_t> index(static_cast<std::size_t>(shape.rank()));
  for (int d = shape.rank() - 1; d >= 0; --d) {
    index[static_cast<std::size_t>(d)] = flat % shape[d];
    flat /= shape[d];
  }
  std::string out = "indices";
  if (index.empty()) return out;
  out += '[';
  for (std::size_t d = 0; d < index.size(); ++d) out += (d ? "," : "") + std::to_string(index[d]);
  return out + ']';
}

// The indices as int64, after checking every one is in [0, n): a bad index is the user's data
// error, so it is reported as an IndexError before any output is written.
std::vector<std::int64_t> read_indices(const char* op, const TensorView& indices, std::int64_t n,
                                       const std::string& context) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(indices.numel()));
  for (std::size_t k = 0; k < out.size(); ++k) {
    out[k] = indices.dtype == DType::int32 ? indices.as<std::int32_t>()[k] : indices.as<std::int64_t>()[k];
    if (out[k] < 0 || out[k] >= n) {
      throw IndexError(op_message(op, index_name(indices.shape, static_cast<std::int64_t>(k)) + " = " +
                                          std::to_string(out[k]) + " is not in [0, " + std::to_string(n) + ") (" +
                                          context + ")"));
    }
  }
  return out;
}

class Gather final : public PrimitiveOf<Gather, OpId::gather> {
 public:
  explicit Gather(int axis) : axis_(axis) {}
  auto fields() const { return std::tie(axis_); }

  TensorSpec infer(std::span<const TensorSpec> in) const override {
    check_index_dtype("gather", in[1]);
    check_axis("gather", "params", in[0], axis_);
    return {gathered_shape("gather", in[0].shape, in[1].shape, axis_), in[0].dtype};
  }

  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    const TensorView& params = in[0];
    const std::int64_t n = params.shape[axis_];
    std::vector<std::int64_t> indices = read_indices(
        "gather", in[1], n,
        "params is " + TensorSpec{params.shape, params.dtype}.to_string() + ", axis " + std::to_string(axis_));
    if (out.numel() == 0) return;
    std::int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis_; ++d) outer *= params.shape[d];
    for (int d = axis_ + 1; d < params.shape.rank(); ++d) inner *= params.shape[d];
    const std::size_t row_bytes = static_cast<std::size_t>(inner) * size_of(out.dtype);
    kernels::cpu().gather_rows(params.data, indices, out.data, outer, n, row_bytes);
  }

  std::vector<Tensor> vjp(const VjpArgs& a) const override {
    if (!a.wanted[0] || !is_floating(a.primals[0].dtype())) return {Tensor(), Tensor()};
    return {scatter_add(a.primals[1], a.cotangent, a.primals[0].shape(), axis_), Tensor()};
  }

  std::string params() const override { return "axis=" + std::to_string(axis_); }
  bool handles_bfloat16() const override { return true; }

 private:
  int axis_;
};

class ScatterAdd final : public PrimitiveOf<ScatterAdd, OpId::scatter_add> {
 public:
  ScatterAdd(Shape shape, int axis) : shape_(shape), axis_(axis) {}
  auto fields() const { return std::tie(shape_, axis_); }

  TensorSpec infer(std::span<const TensorSpec> in) const override {
    const TensorSpec& updates = in[1];
    check_index_dtype("scatter_add", in[0]);
    if (updates.dtype == DType::bool_) {
      throw TypeError(op_message("scatter_add", "updates is " + updates.to_string() +
                                                    "; bool values cannot be added (cast to a numeric dtype first)"));
    }
    TensorSpec out{shape_, updates.dtype};
    check_axis("scatter_add", "the output", out, axis_);
    Shape expected = gathered_shape("scatter_add", shape_, in[0].shape, axis_);
    if (updates.shape != expected) {
      throw ShapeError(op_message("scatter_add", "updates is " + updates.to_string() + " but indices " +
                                                     in[0].shape.to_string() + " into the output " + out.to_string() +
                                                     " along axis " + std::to_string(axis_) +
                                                     " need updates of shape " + expected.to_string()));
    }
    return out;
  }

  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    const std::int64_t n = shape_[axis_];
    std::vector<std::int64_t> indices = read_indices(
        "scatter_add", in[0], n,
        "the output is " + TensorSpec{out.shape, out.dtype}.to_string() + ", axis " + std::to_string(axis_));
    if (out.numel() == 0) return;
    std::int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis_; ++d) outer *= shape_[d];
    for (int d = axis_ + 1; d < shape_.rank(); ++d) inner *= shape_[d];
    kernels::cpu().scatter_add(indices, in[1], out, outer, n, inner);
  }

  std::vector<Tensor> vjp(const VjpArgs& a) const override {
    if (!a.wanted[1] || !is_floating(a.primals[1].dtype())) return {Tensor(), Tensor()};
    return {Tensor(), gather(a.cotangent, a.primals[0], axis_)};
  }

  std::string params() const override { return "shape=" + shape_.to_string() + ", axis=" + std::to_string(axis_); }
  int axis() const { return axis_; }

 private:
  Shape shape_;
  int axis_;
};

}  // namespace

Tensor gather(const Tensor& params, const Tensor& indices, int axis) {
  if (!params.defined() || !indices.defined()) {
    throw ValueError(op_message("gather", std::string(params.defined() ? "indices" : "params") +
                                              " is an undefined tensor; pass a tensor with a value"));
  }
  if (params.rank() == 0) {
    throw ShapeError(op_message(
        "gather", "params is " + params.spec().to_string() + ", a scalar; gather needs params of rank >= 1"));
  }
  int a = normalize_axis(axis, params.rank(), "gather");
  return detail::apply_new<Gather>({params, indices}, a);
}

Tensor scatter_add(const Tensor& indices, const Tensor& updates, const Shape& shape, int axis) {
  if (!indices.defined() || !updates.defined()) {
    throw ValueError(op_message("scatter_add", std::string(indices.defined() ? "updates" : "indices") +
                                                   " is an undefined tensor; pass a tensor with a value"));
  }
  if (shape.rank() == 0) {
    throw ShapeError(op_message("scatter_add", "the output shape is [], a scalar; scatter_add needs rank >= 1"));
  }
  int a = normalize_axis(axis, shape.rank(), "scatter_add");
  return detail::apply_new<ScatterAdd>({indices, updates}, shape, a);
}

}  // namespace kestrel::ops

namespace kestrel::detail {

std::optional<int> scatter_add_axis(const Primitive& primitive) {
  const auto* scatter = dynamic_cast<const ops::ScatterAdd*>(&primitive);
  return scatter != nullptr ? std::optional<int>(scatter->axis()) : std::nullopt;
}

}  // namespace kestrel::detail
