// Activation functions, by Keras name.
//
//   Tensor y = activations::gelu(x);
//   layers::Dense(64, {.activation = "relu"});           // options take Keras's strings
//   ActivationFn f = "softmax";                           // f(x) applies it
//   ActivationFn swish("swish", [](const Tensor& x) { return x * ops::sigmoid(x); });
//
// Names: "linear" (or ""), "relu", "gelu", "sigmoid", "tanh", "softmax", "log_softmax",
// "exponential". Softmax and log_softmax act on the last axis; gelu is the exact (erf) form, as
// Keras's default.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "framework/core/tensor.h"
#include "framework/ops/matmul.h"

namespace kestrel {

/// An activation: a named tensor -> tensor function. Default-constructed, it is "linear".
class ActivationFn {
 public:
  using Fn = std::function<Tensor(const Tensor&)>;

  ActivationFn();
  /// By Keras name; an unknown name throws ValueError listing the known ones.
  ActivationFn(const char* name);  // NOLINT(google-explicit-constructor): Keras takes strings
  // NOLINTNEXTLINE(google-explicit-constructor): activation = "relu", as Keras takes it
  ActivationFn(const std::string& name);
  /// A custom activation under a name of your choice (shown in errors and summaries).
  ActivationFn(std::string name, Fn fn);

  Tensor operator()(const Tensor& x) const { return fn_ ? fn_(x) : x; }
  const std::string& name() const { return name_; }
  /// True for the identity (no op is added to the graph).
  bool is_linear() const { return !fn_; }
  /// The activation as a matrix multiply applies it after its bias (ops::MatmulOptions): relu and
  /// gelu when this is activations::relu or activations::gelu, whatever its name; none otherwise.
  ops::MatmulActivation matmul_activation() const;

 private:
  std::string name_;
  Fn fn_;  // empty for linear
};

namespace activations {

Tensor linear(const Tensor& x);
Tensor relu(const Tensor& x);
/// x * Phi(x) with the exact erf.
Tensor gelu(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
/// Softmax over the last axis.
Tensor softmax(const Tensor& x);
/// Log-softmax over the last axis.
Tensor log_softmax(const Tensor& x);
Tensor exponential(const Tensor& x);

/// The activation called `name` (keras.activations.get); unknown names throw ValueError.
ActivationFn get(const std::string& name);
/// The names get() knows, in a fixed order.
const std::vector<std::string>& names();

}  // namespace activations
}  // namespace kestrel
