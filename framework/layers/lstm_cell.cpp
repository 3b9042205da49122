#include "framework/layers/lstm_cell.h"

#include <cstddef>
#include <cstring>
#include <utility>

#include "framework/ops/ops.h"

namespace kestrel::layers::detail {
namespace {

// Tensors of one dtype joined along axis 0, by copying bytes: initializers make concrete values even
// while a layer builds inside a trace, where ops::concat would only be recorded.
Tensor join_rows(const std::vector<Tensor>& parts, const Shape& shape, DType dtype) {
  Tensor out = Tensor::empty(shape, dtype);
  auto* at = static_cast<std::byte*>(out.view().data);
  for (const Tensor& part : parts) {
    std::memcpy(at, part.raw_data(), part.nbytes());
    at += part.nbytes();
  }
  return out;
}

// Keras's unit_forget_bias: bias_initializer for the i, c and o gates, ones for the forget gate.
Initializer forget_gate_bias(Initializer others, std::int64_t units) {
  return Initializer(others.name(), [others, units](const Shape& shape, DType dtype, const random::Key& key) {
    return join_rows({others({units}, dtype, key.fold_in(0)), Tensor::ones({units}, dtype),
                      others({2 * units}, dtype, key.fold_in(2))},
                     shape, dtype);
  });
}

}  // namespace

LSTMCell::LSTMCell(std::int64_t units, const LSTMOptions& options)
    : Layer("LSTMCell", "lstm_cell"),
      units_(units),
      activation_(options.activation),
      recurrent_activation_(options.recurrent_activation),
      use_bias_(options.use_bias),
      kernel_initializer_(options.kernel_initializer),
      recurrent_initializer_(options.recurrent_initializer),
      bias_initializer_(options.bias_initializer),
      unit_forget_bias_(options.unit_forget_bias) {}

void LSTMCell::build(const Shape& step_input_shape) {
  kernel_ = add_weight("kernel", {step_input_shape[-1], 4 * units_}, kernel_initializer_);
  recurrent_kernel_ = add_weight("recurrent_kernel", {units_, 4 * units_}, recurrent_initializer_);
  if (use_bias_) {
    const Initializer bias = unit_forget_bias_ ? forget_gate_bias(bias_initializer_, units_) : bias_initializer_;
    bias_ = add_weight("bias", {4 * units_}, bias);
  }
}

Tensor LSTMCell::project_inputs(const Tensor& x) const {
  const Tensor projected = ops::matmul(x, kernel_.value());
  return bias_.defined() ? ops::add(projected, bias_.value()) : projected;
}

ops::ScanFunction LSTMCell::step() const {
  // The gates in Keras's order i, f, c, o.
  return [units = units_, activation = activation_, recurrent_activation = recurrent_activation_](
             const std::vector<Tensor>& carry, const std::vector<Tensor>& x, const std::vector<Tensor>& consts) {
    const Tensor z = ops::add(x[0], ops::matmul(carry[0], consts[0]));
    auto gate = [&](std::int64_t k) { return ops::slice(z, {0, k * units}, {-1, units}); };
    const Tensor i = recurrent_activation(gate(0));
    const Tensor f = recurrent_activation(gate(1));
    const Tensor c = ops::add(ops::multiply(f, carry[1]), ops::multiply(i, activation(gate(2))));
    const Tensor o = recurrent_activation(gate(3));
    const Tensor h = ops::multiply(o, activation(c));
    return ops::ScanStep{.carry = {h, c}};
  };
}

std::vector<Tensor> LSTMCell::step_constants() const { return {recurrent_kernel_.value()}; }

std::vector<Tensor> LSTMCell::initial_state(std::int64_t batch, DType dtype) const {
  const Tensor zeros = Tensor::zeros({batch, units_}, dtype);
  return {zeros, zeros};
}

}  // namespace kestrel::layers::detail
