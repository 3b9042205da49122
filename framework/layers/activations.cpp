#include "framework/layers/activations.h"

#include <utility>

#include "framework/core/error.h"
#include "framework/ops/ops.h"

namespace kestrel {
namespace activations {

Tensor linear(const Tensor& x) { return x; }
Tensor relu(const Tensor& x) { return ops::relu(x); }
Tensor gelu(const Tensor& x) { return ops::gelu(x, {.approximate = false}); }
Tensor sigmoid(const Tensor& x) { return ops::sigmoid(x); }
Tensor tanh(const Tensor& x) { return ops::tanh(x); }
Tensor softmax(const Tensor& x) { return ops::softmax(x, -1); }
Tensor log_softmax(const Tensor& x) { return ops::log_softmax(x, -1); }
Tensor exponential(const Tensor& x) { return ops::exp(x); }

const std::vector<std::string>& names() {
  static const std::vector<std::string> all = {"linear", "relu",    "gelu",        "sigmoid",
                                               "tanh",   "softmax", "log_softmax", "exponential"};
  return all;
}

ActivationFn get(const std::string& name) {
  if (name.empty() || name == "linear") return ActivationFn();
  if (name == "relu") return ActivationFn(name, relu);
  if (name == "gelu") return ActivationFn(name, gelu);
  if (name == "sigmoid") return ActivationFn(name, sigmoid);
  if (name == "tanh") return ActivationFn(name, tanh);
  if (name == "softmax") return ActivationFn(name, softmax);
  if (name == "log_softmax") return ActivationFn(name, log_softmax);
  if (name == "exponential") return ActivationFn(name, exponential);
  std::string known;
  for (const std::string& n : names()) known += (known.empty() ? "" : ", ") + n;
  throw ValueError("unknown activation '" + name + "': expected one of " + known +
                   ", or ActivationFn(name, function) for your own");
}

}  // namespace activations

ActivationFn::ActivationFn() : name_("linear") {}
ActivationFn::ActivationFn(const char* name) : ActivationFn(std::string(name)) {}
ActivationFn::ActivationFn(const std::string& name) : ActivationFn(activations::get(name)) {}
ActivationFn::ActivationFn(std::string name, Fn fn) : name_(std::move(name)), fn_(std::move(fn)) {
  if (!fn_) throw ValueError("activation '" + name_ + "' was given an empty function");
}

ops::MatmulActivation ActivationFn::matmul_activation() const {
  // The function itself, not the name: a custom function may be called "relu".
  using Function = Tensor (*)(const Tensor&);
  const Function* function = fn_.target<Function>();
  if (function != nullptr && *function == &activations::relu) return ops::MatmulActivation::relu;
  if (function != nullptr && *function == &activations::gelu) return ops::MatmulActivation::gelu;
  return ops::MatmulActivation::none;
}

}  // namespace kestrel
