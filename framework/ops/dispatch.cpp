#include "framework/ops/dispatch.h"

#include <string>

#include "framework/autodiff/recording.h"
#include "framework/core/error.h"
#include "framework/jit/trace.h"
#include "framework/ops/kernels/cpu_kernels.h"

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

  Tensor out;
  if (jit::Trace* trace = jit::active_trace()) {
    out = trace->record(primitive, inputs, out_spec);  // no kernel: the op joins the traced graph
  } else if (primitive->is_view()) {
    out = Tensor::from_buffer(inputs[0].buffer(), out_spec.shape, out_spec.dtype);
  } else {
    out = Tensor::empty(out_spec.shape, out_spec.dtype);
    run_kernel(*primitive, inputs, out);
  }

  if (autodiff::is_recording() && is_floating(out_spec.dtype)) {
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
