#include "framework/layers/gru_cell.h"

#include "framework/ops/ops.h"

namespace kestrel::layers::detail {

GRUCell::GRUCell(std::int64_t units, const GRUOptions& options)
    : Layer("GRUCell", "gru_cell"),
      units_(units),
      activation_(options.activation),
      recurrent_activation_(options.recurrent_activation),
      use_bias_(options.use_bias),
      reset_after_(options.reset_after),
      kernel_initializer_(options.kernel_initializer),
      recurrent_initializer_(options.recurrent_initializer),
      bias_initializer_(options.bias_initializer) {}

void GRUCell::build(const Shape& step_input_shape) {
  kernel_ = add_weight("kernel", {step_input_shape[-1], 3 * units_}, kernel_initializer_);
  recurrent_kernel_ = add_weight("recurrent_kernel", {units_, 3 * units_}, recurrent_initializer_);
  if (use_bias_) {
    const Shape shape = reset_after_ ? Shape{2, 3 * units_} : Shape{3 * units_};
    bias_ = add_weight("bias", shape, bias_initializer_);
  }
}

Tensor GRUCell::project_inputs(const Tensor& x) const {
  const Tensor projected = ops::matmul(x, kernel_.value());
  if (!bias_.defined()) return projected;
  const Tensor bias = bias_.value();
  if (!reset_after_) return ops::add(projected, bias);
  return ops::add(projected, ops::reshape(ops::slice(bias, {0, 0}, {1, -1}), {3 * units_}));
}

ops::ScanFunction GRUCell::step() const {
  // The gates in Keras's order z (update), r (reset), h.
  return [units = units_, reset_after = reset_after_, activation = activation_,
          recurrent_activation = recurrent_activation_](const std::vector<Tensor>& carry, const std::vector<Tensor>& x,
                                                        const std::vector<Tensor>& consts) {
    const Tensor& h = carry[0];
    Tensor inner = ops::matmul(h, consts[0]);
    if (reset_after && consts.size() > 1) inner = ops::add(inner, consts[1]);
    auto third = [&](const Tensor& t, std::int64_t k) { return ops::slice(t, {0, k * units}, {-1, units}); };
    const Tensor z = recurrent_activation(ops::add(third(x[0], 0), third(inner, 0)));
    const Tensor r = recurrent_activation(ops::add(third(x[0], 1), third(inner, 1)));
    const Tensor recurrent_h =
        reset_after ? ops::multiply(r, third(inner, 2)) : ops::matmul(ops::multiply(r, h), consts[1]);
    const Tensor hh = activation(ops::add(third(x[0], 2), recurrent_h));
    const Tensor next = ops::add(ops::multiply(z, h), ops::multiply(ops::subtract(ops::ones_like(z), z), hh));
    return ops::ScanStep{.carry = {next}};
  };
}

std::vector<Tensor> GRUCell::step_constants() const {
  const Tensor recurrent = recurrent_kernel_.value();
  if (!reset_after_) {
    // (r * h) @ recurrent_kernel[:, 2u:] needs the h columns apart from the z and r ones.
    return {ops::slice(recurrent, {0, 0}, {-1, 2 * units_}), ops::slice(recurrent, {0, 2 * units_}, {-1, units_})};
  }
  if (!bias_.defined()) return {recurrent};
  return {recurrent, ops::reshape(ops::slice(bias_.value(), {1, 0}, {1, -1}), {3 * units_})};
}

std::vector<Tensor> GRUCell::initial_state(std::int64_t batch, DType dtype) const {
  return {Tensor::zeros({batch, units_}, dtype)};
}

}  // namespace kestrel::layers::detail
