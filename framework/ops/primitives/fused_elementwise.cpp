// fused_elementwise: an ElementwiseProgram run in one pass over memory (see fused_elementwise.h).
// Optimizer updates use it eagerly; the jit's fusion pass will emit it for chains of
// elementwise ops.
#include <string>
#include <tuple>

#include "framework/autodiff/recording.h"
#include "framework/core/error.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/fused_elementwise.h"
#include "framework/ops/kernels/fused_elementwise_kernel.h"

namespace kestrel {
namespace {

std::string input_name(std::size_t index) { return "input " + std::to_string(index); }

class FusedElementwise final : public PrimitiveOf<FusedElementwise, OpId::fused_elementwise> {
 public:
  explicit FusedElementwise(ElementwiseProgram program) : program_(std::move(program)) {}
  auto fields() const { return std::tie(program_); }
  std::string params() const override { return program_.to_string(); }

  TensorSpec infer(std::span<const TensorSpec> in) const override {
    if (in.size() != static_cast<std::size_t>(program_.num_inputs())) {
      throw ValueError(op_message("fused_elementwise", "the program reads " + std::to_string(program_.num_inputs()) +
                                                           " inputs but got " + std::to_string(in.size()) +
                                                           "; pass one tensor per input(k) (program: " +
                                                           program_.to_string() + ")"));
    }
    // The output takes the shape of the full-shaped inputs; every other input must be rank-0.
    const TensorSpec* full = nullptr;
    std::size_t full_index = 0;
    bool all_bfloat16 = true;
    bool any_full_float32 = false;
    for (std::size_t i = 0; i < in.size(); ++i) {
      const TensorSpec& s = in[i];
      if (!is_floating(s.dtype)) {
        throw TypeError(op_message("fused_elementwise", input_name(i) + " is " + s.to_string() +
                                                            "; inputs must be float32 or bfloat16 (cast it with "
                                                            "ops::cast first)"));
      }
      all_bfloat16 &= s.dtype == DType::bfloat16;
      if (s.shape.rank() == 0) continue;
      any_full_float32 |= s.dtype == DType::float32;
      if (full == nullptr) {
        full = &s;
        full_index = i;
      } else if (s.shape != full->shape) {
        throw ShapeError(op_message("fused_elementwise",
                                    input_name(i) + " is " + s.to_string() + " but " + input_name(full_index) +
                                        " is " + full->to_string() +
                                        ": each input must have the output's shape or be a rank-0 scalar "
                                        "(broadcast it with ops::broadcast_to first)"));
      }
    }
    if (full == nullptr) return {Shape{}, all_bfloat16 && !in.empty() ? DType::bfloat16 : DType::float32};
    // Computed in float32; stored as bfloat16 only when every full-shaped input is.
    return {full->shape, any_full_float32 ? DType::float32 : DType::bfloat16};
  }

  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    kernels::run_elementwise_program(program_, in, out);
  }

  std::vector<Tensor> vjp(const VjpArgs&) const override {
    // ops::fused_elementwise refuses to run under a tape that wants gradients, so this is never
    // reached from the public op.
    throw ValueError(op_message("fused_elementwise", "is not differentiable; write the expression with the "
                                                     "public ops where it needs gradients"));
  }

 private:
  ElementwiseProgram program_;
};

}  // namespace

namespace ops {

Tensor fused_elementwise(const ElementwiseProgram& program, const std::vector<Tensor>& inputs) {
  if (autodiff::is_recording()) {
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
  return detail::apply_new<FusedElementwise>(inputs, program);
}

}  // namespace ops
}  // namespace kestrel
