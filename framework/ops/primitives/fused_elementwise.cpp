// fused_elementwise: an ElementwiseProgram run in one pass over memory (see fused_elementwise.h).
// Optimizer updates use it eagerly; the jit's fusion pass (jit/passes/elementwise_fusion.h) emits
// it for regions of elementwise ops.
#include <optional>
#include <string>
#include <tuple>

#include "framework/core/error.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/fused_elementwise.h"
#include "framework/ops/kernels/fused_elementwise_kernel.h"
#include "framework/ops/recording.h"

namespace kestrel {
namespace {

std::string input_name(std::size_t index) { return "input " + std::to_string(index); }

class FusedElementwise final : public PrimitiveOf<FusedElementwise, OpId::fused_elementwise> {
 public:
  FusedElementwise(ElementwiseProgram program, FusedElementwiseOptions options)
      : program_(std::move(program)),
        explicit_shape_(options.shape.has_value()),
        shape_(options.shape.value_or(Shape{})),
        dtype_(options.dtype) {
    if (dtype_.has_value() && !is_floating(*dtype_)) {
      throw TypeError(op_message(
          "fused_elementwise", "the output dtype must be float32 or bfloat16, not " + std::string(to_string(*dtype_))));
    }
  }
  auto fields() const { return std::tie(program_, explicit_shape_, shape_, dtype_); }
  bool handles_bfloat16() const override { return true; }
  // The formula, not the instruction list, so a graph dump line stays readable; a given shape is
  // the node's own and shows in its spec.
  std::string params() const override { return program_.to_expression(); }
  const ElementwiseProgram& program() const { return program_; }

  TensorSpec infer(std::span<const TensorSpec> in) const override {
    if (in.size() != static_cast<std::size_t>(program_.num_inputs())) {
      throw ValueError(op_message("fused_elementwise",
                                  "the program reads " + std::to_string(program_.num_inputs()) + " inputs but got " +
                                      std::to_string(in.size()) +
                                      "; pass one tensor per input(k) (program: " + program_.to_string() + ")"));
    }
    // The output's shape: given, or the first input of the highest rank's. Every other input must
    // be rank-0 or a suffix of it.
    const TensorSpec* widest = nullptr;
    std::size_t widest_index = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
      if (!is_floating(in[i].dtype)) {
        throw TypeError(op_message("fused_elementwise", input_name(i) + " is " + in[i].to_string() +
                                                            "; inputs must be float32 or bfloat16 (cast it with "
                                                            "ops::cast first)"));
      }
      // The output takes the largest input's shape (a row-broadcast input has the full rank too).
      if (widest == nullptr || in[i].shape.rank() > widest->shape.rank() ||
          (in[i].shape.rank() == widest->shape.rank() && in[i].shape.numel() > widest->shape.numel())) {
        widest = &in[i];
        widest_index = i;
      }
    }
    const Shape shape = explicit_shape_ ? shape_ : widest != nullptr ? widest->shape : Shape{};
    bool all_bfloat16 = true;
    bool any_tensor = false;
    bool any_tensor_float32 = false;
    for (std::size_t i = 0; i < in.size(); ++i) {
      const TensorSpec& s = in[i];
      all_bfloat16 &= s.dtype == DType::bfloat16;
      if (s.shape.rank() == 0) continue;
      any_tensor = true;
      any_tensor_float32 |= s.dtype == DType::float32;
      if (detail::fused_input_fits(s.shape, shape)) continue;
      const std::string against = explicit_shape_ ? "the output shape is " + shape.to_string()
                                                  : input_name(widest_index) + " is " + widest->to_string();
      throw ShapeError(op_message("fused_elementwise",
                                  input_name(i) + " is " + s.to_string() + " but " + against +
                                      ": each input must have the output's shape, a suffix of it (repeated over "
                                      "the leading axes), its leading axes then 1s (repeated over the trailing "
                                      "axes, at least 16 elements), or be a rank-0 scalar (broadcast it with "
                                      "ops::broadcast_to first)"));
    }
    if (dtype_.has_value()) return {shape, *dtype_};
    // Computed in float32; stored as bfloat16 only when every non-scalar input is.
    if (!any_tensor) return {shape, all_bfloat16 && !in.empty() ? DType::bfloat16 : DType::float32};
    return {shape, any_tensor_float32 ? DType::float32 : DType::bfloat16};
  }

  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    kernels::run_elementwise_program(program_, in, out);
  }

  std::vector<Tensor> vjp(const VjpArgs&) const override {
    // ops::fused_elementwise refuses to run under a tape that wants gradients, so this is never
    // reached from the public op.
    throw ValueError(op_message("fused_elementwise",
                                "is not differentiable; write the expression with the "
                                "public ops where it needs gradients"));
  }

 private:
  ElementwiseProgram program_;
  bool explicit_shape_;
  Shape shape_;  // the output's, when explicit_shape_
  std::optional<DType> dtype_;
};

}  // namespace

namespace ops {

Tensor fused_elementwise(const ElementwiseProgram& program, const std::vector<Tensor>& inputs,
                         FusedElementwiseOptions options) {
  if (detail::gradient_recording_depth() > 0) {
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].defined() && inputs[i].requires_grad()) {
        throw ValueError(op_message("fused_elementwise", input_name(i) +
                                                             " needs a gradient, but fused programs are not "
                                                             "differentiable: they run after autodiff (optimizer "
                                                             "updates, jit-fused regions). Write the expression "
                                                             "with the public ops, or run it under "
                                                             "autodiff::NoGradScope"));
      }
    }
  }
  return detail::apply_new<FusedElementwise>(inputs, program, std::move(options));
}

}  // namespace ops

namespace detail {

std::shared_ptr<const Primitive> fused_elementwise_primitive(ElementwiseProgram program,
                                                             FusedElementwiseOptions options) {
  return std::make_shared<const FusedElementwise>(std::move(program), std::move(options));
}

const ElementwiseProgram* fused_program_of(const Primitive& primitive) {
  const auto* fused = dynamic_cast<const FusedElementwise*>(&primitive);
  return fused != nullptr ? &fused->program() : nullptr;
}

std::optional<std::int64_t> fused_input_repeat(const Shape& input, const Shape& output) {
  if (input.rank() > output.rank()) return std::nullopt;
  const int offset = output.rank() - input.rank();
  bool suffix = true;
  for (int d = 0; d < input.rank() && suffix; ++d) suffix = input[d] == output[d + offset];
  if (suffix) return 0;
  if (input.rank() != output.rank()) return std::nullopt;
  // Leading dimensions as the output's, then only 1s: each element repeats over the trailing axes.
  int leading = 0;
  while (leading < input.rank() && input[leading] == output[leading]) ++leading;
  std::int64_t repeat = 1;
  for (int d = leading; d < input.rank(); ++d) {
    if (input[d] != 1) return std::nullopt;
    repeat *= output[d];
  }
  if (repeat < kFusedMinRepeat) return std::nullopt;
  return repeat;
}

bool fused_input_fits(const Shape& input, const Shape& output) { return fused_input_repeat(input, output).has_value(); }

}  // namespace detail
}  // namespace kestrel
