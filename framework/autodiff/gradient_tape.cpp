#include "framework/autodiff/gradient_tape.h"

#include <string>

#include "framework/autodiff/backward.h"
#include "framework/autodiff/recording.h"
#include "framework/core/error.h"

namespace kestrel {

GradientTape::GradientTape(bool persistent) : persistent_(persistent) { autodiff::detail::push_recording(); }

GradientTape::~GradientTape() {
  if (recording_) autodiff::detail::pop_recording();
}

void GradientTape::watch(const Tensor& tensor) {
  if (!tensor.defined()) throw ValueError("[GradientTape.watch] the tensor is undefined");
  if (!is_floating(tensor.dtype())) {
    throw TypeError("[GradientTape.watch] only floating tensors have gradients; this one is " +
                    tensor.spec().to_string() + " (cast it to float32 first)");
  }
  tensor.set_requires_grad(true);
}

std::vector<Tensor> GradientTape::gradient(const Tensor& target, const std::vector<Tensor>& sources,
                                           const Tensor& output_gradient) {
  if (used_ && !persistent_) {
    throw ValueError(
        "[GradientTape.gradient] a non-persistent tape can compute gradients only once; "
        "create it with GradientTape(/*persistent=*/true) to call gradient() again");
  }
  used_ = true;
  if (!target.defined()) throw ValueError("[GradientTape.gradient] the target is undefined");
  // This tape's own recording pauses while it differentiates; outer tapes keep recording.
  if (recording_) autodiff::detail::pop_recording();
  struct Resume {
    bool on;
    ~Resume() {
      if (on) autodiff::detail::push_recording();
    }
  } resume{recording_};
  Tensor seed = output_gradient.defined() ? output_gradient : Tensor::ones(target.shape(), target.dtype());
  return autodiff::detail::backward(target, seed, sources);
}

}  // namespace kestrel
