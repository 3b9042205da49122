// 2-D max and average pooling over NHWC images, and their gradients: the ops, their checks and
// their geometry. The kernels are framework/ops/kernels/cpu/pool.cpp.
#include <limits>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/ops/conv.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/kernels/cpu_kernels.h"
#include "framework/ops/kernels/window.h"
#include "framework/ops/primitive.h"

namespace kestrel::ops {
namespace {

using kernels::output_extent;
using kernels::pad_before;
using kernels::padding_name;

using kernels::PoolGeometry;

// pool_size and strides as the primitives store them: strides {0, 0} resolved to pool_size.
struct Window {
  int k_h, k_w, stride_h, stride_w;
  Padding padding;
};

Window resolve(std::string_view op, const Pool2DOptions& o) {
  const int k_h = o.pool_size[0];
  const int k_w = o.pool_size[1];
  if (k_h < 1 || k_w < 1) {
    throw ValueError(op_message(
        op, "pool_size is {" + std::to_string(k_h) + ", " + std::to_string(k_w) + "}; each pool dim must be >= 1"));
  }
  const bool keras_default = o.strides[0] == 0 && o.strides[1] == 0;
  const int s_h = keras_default ? k_h : o.strides[0];
  const int s_w = keras_default ? k_w : o.strides[1];
  if (s_h < 1 || s_w < 1) {
    throw ValueError(op_message(op, "strides are {" + std::to_string(o.strides[0]) + ", " +
                                        std::to_string(o.strides[1]) +
                                        "}; each stride must be >= 1 ({0, 0} means equal to pool_size)"));
  }
  return {k_h, k_w, s_h, s_w, o.padding};
}

std::string window_text(const Window& w) {
  return "pool_size " + std::to_string(w.k_h) + "x" + std::to_string(w.k_w) + ", strides " +
         std::to_string(w.stride_h) + "x" + std::to_string(w.stride_w) + ", padding " + padding_name(w.padding);
}

PoolGeometry pool_geometry(std::string_view op, const char* input_name, const Shape& input, const Window& w) {
  if (input.rank() != 4) {
    throw ShapeError(op_message(op, std::string(input_name) + " is " + input.to_string() +
                                        ": pooling needs a rank-4 NHWC input [batch, height, width, channels]"));
  }
  if (w.padding == Padding::valid && (w.k_h > input[1] || w.k_w > input[2])) {
    throw ShapeError(op_message(
        op, std::string(input_name) + " is " + input.to_string() + ": the " + std::to_string(w.k_h) + "x" +
                std::to_string(w.k_w) + " pool window is larger than the " + std::to_string(input[1]) + "x" +
                std::to_string(input[2]) + " image with valid padding; use padding same or a smaller pool_size"));
  }
  if (input[1] * input[2] > std::numeric_limits<std::int32_t>::max()) {
    throw ShapeError(op_message(op, std::string(input_name) + " is " + input.to_string() + ": images of more than " +
                                        std::to_string(std::numeric_limits<std::int32_t>::max()) +
                                        " pixels are not supported"));
  }
  PoolGeometry g{};
  g.batch = input[0];
  g.in_h = input[1];
  g.in_w = input[2];
  g.channels = input[3];
  g.k_h = w.k_h;
  g.k_w = w.k_w;
  g.stride_h = w.stride_h;
  g.stride_w = w.stride_w;
  g.out_h = output_extent(g.in_h, g.k_h, w.stride_h, w.padding);
  g.out_w = output_extent(g.in_w, g.k_w, w.stride_w, w.padding);
  g.pad_top = pad_before(g.in_h, g.out_h, g.k_h, g.stride_h);
  g.pad_left = pad_before(g.in_w, g.out_w, g.k_w, g.stride_w);
  return g;
}

void check_float(std::string_view op, const char* name, const TensorSpec& spec) {
  if (!is_floating(spec.dtype)) {
    throw TypeError(op_message(op, std::string(name) + " is " + spec.to_string() + ": " + std::string(op) +
                                       " needs float32 or bfloat16 (cast with ops::cast)"));
  }
}

void check_same_dtype(std::string_view op, const char* a_name, const TensorSpec& a, const char* b_name,
                      const TensorSpec& b) {
  check_float(op, a_name, a);
  check_float(op, b_name, b);
  if (a.dtype != b.dtype) {
    throw TypeError(op_message(op, std::string(a_name) + " is " + a.to_string() + ", " + b_name + " is " +
                                       b.to_string() +
                                       ": the primitive needs one dtype (the public function promotes)"));
  }
}

void check_shape(std::string_view op, const char* name, const Shape& got, const Shape& want, const std::string& why) {
  if (got != want) {
    throw ShapeError(op_message(
        op, std::string(name) + " is " + got.to_string() + " but must be " + want.to_string() + " (" + why + ")"));
  }
}

// Shared by the five primitives: the resolved window, which is all their parameters but a shape.
template <class Derived, OpId kId>
class PoolPrimitive : public PrimitiveOf<Derived, kId> {
 public:
  explicit PoolPrimitive(const Window& w)
      : k_h_(w.k_h), k_w_(w.k_w), stride_h_(w.stride_h), stride_w_(w.stride_w), padding_(w.padding) {}
  std::string params() const override { return window_text(window()); }

 protected:
  Window window() const { return {k_h_, k_w_, stride_h_, stride_w_, padding_}; }
  Pool2DOptions options() const {
    return {.pool_size = {k_h_, k_w_}, .strides = {stride_h_, stride_w_}, .padding = padding_};
  }
  PoolGeometry geometry(const char* input_name, const Shape& input) const {
    return pool_geometry(this->name(), input_name, input, window());
  }
  auto window_fields() const { return std::tie(k_h_, k_w_, stride_h_, stride_w_, padding_); }

 private:
  int k_h_, k_w_, stride_h_, stride_w_;
  Padding padding_;
};

class MaxPool2D final : public PoolPrimitive<MaxPool2D, OpId::max_pool2d> {
 public:
  using PoolPrimitive::PoolPrimitive;
  auto fields() const { return window_fields(); }
  TensorSpec infer(std::span<const TensorSpec> in) const override {
    check_float(name(), "input", in[0]);
    return {geometry("input", in[0].shape).output_shape(), in[0].dtype};
  }
  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    kernels::cpu().max_pool2d(geometry("input", in[0].shape), in[0].as<float>(), out.as<float>());
  }
  std::vector<Tensor> vjp(const VjpArgs& a) const override {
    return {a.wanted[0] ? max_pool2d_backprop(a.primals[0], a.cotangent, options()) : Tensor()};
  }
};

// Inputs (input, dy) -> shaped like input.
class MaxPool2DBackprop final : public PoolPrimitive<MaxPool2DBackprop, OpId::max_pool2d_backprop> {
 public:
  using PoolPrimitive::PoolPrimitive;
  auto fields() const { return window_fields(); }
  TensorSpec infer(std::span<const TensorSpec> in) const override {
    check_same_dtype(name(), "input", in[0], "dy", in[1]);
    check_shape(name(), "dy", in[1].shape, geometry("input", in[0].shape).output_shape(),
                "max_pool2d's output for input " + in[0].shape.to_string() + " with " + window_text(window()));
    return in[0];
  }
  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    kernels::cpu().max_pool2d_backprop(geometry("input", in[0].shape), in[0].as<float>(), in[1].as<float>(),
                                       out.as<float>());
  }
  // Linear in dy, whose transpose picks the routed elements back out; piecewise constant in
  // input (the routing only changes where maxima swap), so input gets no gradient.
  std::vector<Tensor> vjp(const VjpArgs& a) const override {
    return {Tensor(), a.wanted[1] ? max_pool2d_select(a.primals[0], a.cotangent, options()) : Tensor()};
  }
};

// Inputs (input, values) -> shaped like max_pool2d's output.
class MaxPool2DSelect final : public PoolPrimitive<MaxPool2DSelect, OpId::max_pool2d_select> {
 public:
  using PoolPrimitive::PoolPrimitive;
  auto fields() const { return window_fields(); }
  TensorSpec infer(std::span<const TensorSpec> in) const override {
    check_same_dtype(name(), "input", in[0], "values", in[1]);
    check_shape(name(), "values", in[1].shape, in[0].shape, "shaped like input");
    return {geometry("input", in[0].shape).output_shape(), in[0].dtype};
  }
  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    kernels::cpu().max_pool2d_select(geometry("input", in[0].shape), in[0].as<float>(), in[1].as<float>(),
                                     out.as<float>());
  }
  std::vector<Tensor> vjp(const VjpArgs& a) const override {
    return {Tensor(), a.wanted[1] ? max_pool2d_backprop(a.primals[0], a.cotangent, options()) : Tensor()};
  }
};

class AvgPool2D final : public PoolPrimitive<AvgPool2D, OpId::avg_pool2d> {
 public:
  using PoolPrimitive::PoolPrimitive;
  auto fields() const { return window_fields(); }
  TensorSpec infer(std::span<const TensorSpec> in) const override {
    check_float(name(), "input", in[0]);
    return {geometry("input", in[0].shape).output_shape(), in[0].dtype};
  }
  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    kernels::cpu().avg_pool2d(geometry("input", in[0].shape), in[0].as<float>(), out.as<float>());
  }
  std::vector<Tensor> vjp(const VjpArgs& a) const override {
    return {a.wanted[0] ? avg_pool2d_backprop(a.cotangent, a.primals[0].shape(), options()) : Tensor()};
  }
};

// Input dy -> shaped input_shape.
class AvgPool2DBackprop final : public PoolPrimitive<AvgPool2DBackprop, OpId::avg_pool2d_backprop> {
 public:
  AvgPool2DBackprop(const Window& w, Shape input_shape) : PoolPrimitive(w), input_shape_(input_shape) {}
  auto fields() const { return std::tuple_cat(window_fields(), std::tie(input_shape_)); }
  std::string params() const override {
    return "input_shape=" + input_shape_.to_string() + ", " + window_text(window());
  }
  TensorSpec infer(std::span<const TensorSpec> in) const override {
    check_float(name(), "dy", in[0]);
    check_shape(name(), "dy", in[0].shape, geometry("input_shape", input_shape_).output_shape(),
                "avg_pool2d's output for input_shape " + input_shape_.to_string() + " with " + window_text(window()));
    return {input_shape_, in[0].dtype};
  }
  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    kernels::cpu().avg_pool2d_backprop(geometry("input_shape", input_shape_), in[0].as<float>(), out.as<float>());
  }
  // Linear in dy; its transpose averages each window again.
  std::vector<Tensor> vjp(const VjpArgs& a) const override {
    return {a.wanted[0] ? avg_pool2d(a.cotangent, options()) : Tensor()};
  }

 private:
  Shape input_shape_;
};

void check_defined(std::string_view op, const char* name, const Tensor& t) {
  if (!t.defined())
    throw ValueError(op_message(op, std::string(name) + " is an undefined tensor; pass a tensor with a value"));
}

// Two float operands of one dtype: float32 with bfloat16 computes in float32.
std::pair<Tensor, Tensor> prepare_pair(std::string_view op, const char* a_name, const Tensor& a, const char* b_name,
                                       const Tensor& b) {
  check_defined(op, a_name, a);
  check_defined(op, b_name, b);
  check_float(op, a_name, a.spec());
  check_float(op, b_name, b.spec());
  if (a.dtype() == b.dtype()) return {a, b};
  auto widen = [](const Tensor& t) { return t.dtype() == DType::float32 ? t : cast(t, DType::float32); };
  return {widen(a), widen(b)};
}

}  // namespace

Tensor max_pool2d(const Tensor& input, const Pool2DOptions& options) {
  check_defined("max_pool2d", "input", input);
  return detail::apply_new<MaxPool2D>({input}, resolve("max_pool2d", options));
}

Tensor avg_pool2d(const Tensor& input, const Pool2DOptions& options) {
  check_defined("avg_pool2d", "input", input);
  return detail::apply_new<AvgPool2D>({input}, resolve("avg_pool2d", options));
}

Tensor max_pool2d_backprop(const Tensor& input, const Tensor& dy, const Pool2DOptions& options) {
  auto [x, g] = prepare_pair("max_pool2d_backprop", "input", input, "dy", dy);
  return detail::apply_new<MaxPool2DBackprop>({x, g}, resolve("max_pool2d_backprop", options));
}

Tensor max_pool2d_select(const Tensor& input, const Tensor& values, const Pool2DOptions& options) {
  auto [x, v] = prepare_pair("max_pool2d_select", "input", input, "values", values);
  return detail::apply_new<MaxPool2DSelect>({x, v}, resolve("max_pool2d_select", options));
}

Tensor avg_pool2d_backprop(const Tensor& dy, const Shape& input_shape, const Pool2DOptions& options) {
  check_defined("avg_pool2d_backprop", "dy", dy);
  return detail::apply_new<AvgPool2DBackprop>({dy}, resolve("avg_pool2d_backprop", options), input_shape);
}

}  // namespace kestrel::ops
