#include "framework/autodiff/value_and_grad.h"

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/error.h"
#include "framework/ops/shape_ops.h"

namespace kestrel {

std::pair<Tensor, std::vector<Tensor>> value_and_grad(const TensorFunction& f, const std::vector<Tensor>& args,
                                                      const Tensor& output_gradient) {
  GradientTape tape;
  std::vector<Tensor> leaves;
  leaves.reserve(args.size());
  for (const Tensor& arg : args) {
    if (!arg.defined() || !is_floating(arg.dtype())) {
      leaves.push_back(arg);
      continue;
    }
    // Differentiate with respect to a fresh handle, so the caller's tensor is not marked. A tensor
    // an outer tape already tracks is linked through a no-op reshape, keeping higher orders intact.
    Tensor leaf = arg.requires_grad() ? ops::reshape(arg, arg.shape())
                                      : Tensor::from_buffer(arg.buffer(), arg.shape(), arg.dtype());
    leaf.set_requires_grad(true);
    leaves.push_back(leaf);
  }
  Tensor value = f(leaves);
  if (!value.defined()) throw ValueError("[value_and_grad] the function returned an undefined tensor");
  if (!output_gradient.defined() && value.numel() != 1) {
    throw ShapeError("[value_and_grad] the function returned " + value.spec().to_string() +
                     "; return a scalar (e.g. ops::sum or ops::mean of it) or pass output_gradient");
  }
  std::vector<Tensor> floating;
  for (const Tensor& leaf : leaves) {
    if (leaf.defined() && is_floating(leaf.dtype())) floating.push_back(leaf);
  }
  std::vector<Tensor> floating_grads = tape.gradient(value, floating, output_gradient);
  std::vector<Tensor> grads;
  std::size_t next = 0;
  for (const Tensor& leaf : leaves) {
    grads.push_back(leaf.defined() && is_floating(leaf.dtype()) ? floating_grads[next++] : Tensor());
  }
  return {value, grads};
}

std::vector<Tensor> grad(const TensorFunction& f, const std::vector<Tensor>& args) {
  return value_and_grad(f, args).second;
}

}  // namespace kestrel
