#include "framework/ops/dispatch.h"

#include <string>
#include <string_view>

#include "framework/core/error.h"
#include "framework/ops/kernels/cpu_kernels.h"
#include "framework/ops/recording.h"

namespace kestrel::detail {
namespace {

Tensor to_float32(const Tensor& t) {
  Tensor out = Tensor::empty(t.shape(), DType::float32);
  kernels::cpu().convert(t.view(), out.view());
  return out;
}

// Runs a float32-only kernel on bfloat16 data: widen the inputs, compute, round the output.
void run_widened(const Primitive& p, const std::vector<Tensor>& inputs, const Tensor& out) {
  std::vector<Tensor> wide;
  std::vector<TensorView> views;
  wide.reserve(inputs.size());
  for (const Tensor& t : inputs) {
    wide.push_back(t.dtype() == DType::bfloat16 ? to_float32(t) : t);
    views.push_back(wide.back().view());
  }
  if (out.dtype() != DType::bfloat16) {
    p.eval_cpu(views, out.view());
    return;
  }
  Tensor wide_out = Tensor::empty(out.shape(), DType::float32);
  p.eval_cpu(views, wide_out.view());
  kernels::cpu().convert(wide_out.view(), out.view());
}

// An op run eagerly on a symbolic tensor: one of a trace that has finished, or a Keras tensor.
[[noreturn]] void throw_symbolic_input(std::string_view op, const Tensor& t) {
  const SymbolicValue& s = *t.symbolic();
  if (s.keras_history) {
    throw ValueError(op_message(op, "was given " + s.origin +
                                        ", a Keras tensor, outside a layer: the Functional API records layer "
                                        "calls, so put the op inside the call() of a Layer subclass and call "
                                        "that layer on the tensor"));
  }
  throw JitError(op_message(op, "was given " + s.origin +
                                    ", a tensor of a jit trace that has finished; a traced value has no data "
                                    "outside its compiled step: return it from the step instead"));
}

}  // namespace

void run_kernel(const Primitive& p, const std::vector<Tensor>& inputs, const Tensor& out) {
  bool touches_bf16 = out.dtype() == DType::bfloat16;
  for (const Tensor& t : inputs) touches_bf16 |= t.dtype() == DType::bfloat16;
  if (touches_bf16 && !p.handles_bfloat16()) {
    run_widened(p, inputs, out);
    return;
  }
  std::vector<TensorView> views;
  views.reserve(inputs.size());
  for (const Tensor& t : inputs) views.push_back(t.view());
  p.eval_cpu(views, out.view());
}

Tensor apply(std::shared_ptr<const Primitive> primitive, std::vector<Tensor> inputs) {
  std::vector<TensorSpec> specs;
  specs.reserve(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      throw ValueError(op_message(
          primitive->name(), "input " + std::to_string(i) + " is an undefined tensor; pass a tensor with a value"));
    }
    specs.push_back(inputs[i].spec());
  }
  TensorSpec out_spec = primitive->infer(specs);

  OpRecorder* recorder = op_recorder();
  if (recorder == nullptr) {
    for (const Tensor& t : inputs) {
      if (t.is_symbolic()) throw_symbolic_input(primitive->name(), t);
    }
  }

  Tensor out;
  if (recorder != nullptr) {
    out = recorder->record(primitive, inputs, out_spec);  // no kernel: the op joins the traced graph
  } else if (primitive->is_view()) {
    out = Tensor::from_buffer(inputs[0].buffer(), out_spec.shape, out_spec.dtype);
  } else {
    out = Tensor::empty(out_spec.shape, out_spec.dtype);
    run_kernel(*primitive, inputs, out);
  }

  if (gradient_recording_depth() > 0 && is_floating(out_spec.dtype)) {
    bool needs_grad = false;
    for (const Tensor& t : inputs) needs_grad |= t.requires_grad();
    if (needs_grad) {
      out.impl().requires_grad = true;
      out.impl().grad_record = std::make_unique<GradRecord>(GradRecord{std::move(primitive), std::move(inputs)});
    }
  }
  return out;
}

}  // namespace kestrel::detail
