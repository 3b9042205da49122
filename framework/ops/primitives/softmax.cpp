// softmax and log_softmax over one axis; the kernel is framework/ops/kernels/cpu/softmax.cpp.
#include <string>

#include "framework/core/error.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/kernels/cpu_kernels.h"
#include "framework/ops/nn.h"
#include "framework/ops/primitive.h"
#include "framework/ops/reduce.h"

namespace kestrel {
namespace {

[[noreturn]] void throw_scalar_input(std::string_view name) {
  throw ShapeError(op_message(name, "x is a scalar; " + std::string(name) + " needs a tensor with at least one axis"));
}

TensorSpec infer_softmax(std::string_view name, std::span<const TensorSpec> inputs, int axis) {
  const TensorSpec& x = inputs[0];
  if (!is_floating(x.dtype)) {
    throw TypeError(op_message(name, "x is " + x.to_string() + "; " + std::string(name) +
                                         " needs float32 or bfloat16 input (cast integers with ops::cast)"));
  }
  if (x.shape.rank() == 0) throw_scalar_input(name);
  if (axis < 0 || axis >= x.shape.rank()) {
    throw ShapeError(op_message(name, "axis " + std::to_string(axis) + " is out of range for x " + x.to_string()));
  }
  return x;
}

class Softmax final : public PrimitiveOf<Softmax, OpId::softmax> {
 public:
  explicit Softmax(int axis) : axis_(axis) {}
  auto fields() const { return std::tie(axis_); }
  std::string params() const override { return "axis=" + std::to_string(axis_); }

  TensorSpec infer(std::span<const TensorSpec> inputs) const override { return infer_softmax(name(), inputs, axis_); }
  void eval_cpu(std::span<const TensorView> inputs, const TensorView& output) const override {
    kernels::cpu().softmax(inputs[0], output, axis_, /*log=*/false);
  }
  bool handles_bfloat16() const override { return true; }
  // dx = y * (g - sum(g * y)): the softmax Jacobian diag(y) - y y^T applied to g.
  std::vector<Tensor> vjp(const VjpArgs& a) const override {
    if (!a.wanted[0]) return {Tensor()};
    const Tensor& y = a.output;
    Tensor dot = ops::sum(ops::multiply(a.cotangent, y), {.axes = {axis_}, .keepdims = true});
    return {ops::multiply(y, ops::subtract(a.cotangent, dot))};
  }

 private:
  int axis_;
};

class LogSoftmax final : public PrimitiveOf<LogSoftmax, OpId::log_softmax> {
 public:
  explicit LogSoftmax(int axis) : axis_(axis) {}
  auto fields() const { return std::tie(axis_); }
  std::string params() const override { return "axis=" + std::to_string(axis_); }

  TensorSpec infer(std::span<const TensorSpec> inputs) const override { return infer_softmax(name(), inputs, axis_); }
  void eval_cpu(std::span<const TensorView> inputs, const TensorView& output) const override {
    kernels::cpu().softmax(inputs[0], output, axis_, /*log=*/true);
  }
  bool handles_bfloat16() const override { return true; }
  // dx = g - softmax(x) * sum(g), with softmax(x) recovered as exp(y).
  std::vector<Tensor> vjp(const VjpArgs& a) const override {
    if (!a.wanted[0]) return {Tensor()};
    Tensor total = ops::sum(a.cotangent, {.axes = {axis_}, .keepdims = true});
    return {ops::subtract(a.cotangent, ops::multiply(ops::exp(a.output), total))};
  }

 private:
  int axis_;
};

// Checks x up front so a bad axis is reported against x's rank, then builds the node.
template <class P>
Tensor build_softmax(const char* name, const Tensor& x, int axis) {
  if (x.defined() && x.rank() == 0) throw_scalar_input(name);
  const int normalized = x.defined() ? normalize_axis(axis, x.rank(), name) : axis;
  return detail::apply_new<P>({x}, normalized);
}

}  // namespace

namespace ops {

Tensor softmax(const Tensor& x, int axis) { return build_softmax<Softmax>("softmax", x, axis); }

Tensor log_softmax(const Tensor& x, int axis) { return build_softmax<LogSoftmax>("log_softmax", x, axis); }

}  // namespace ops
}  // namespace kestrel
