#include "framework/layers/lstm.h"

#include <cstddef>
#include <cstring>
#include <utility>
#include <vector>

#include "framework/core/error.h"
#include "framework/layers/recurrent_config.h"
#include "framework/layers/recurrent_loop.h"
#include "framework/ops/ops.h"

namespace kestrel::layers {
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

// One LSTM step on x_t @ kernel + bias (x[0], [batch, 4 * units]), from carry (h, c).
ops::ScanFunction lstm_step(std::int64_t units, ActivationFn activation, ActivationFn recurrent_activation) {
  return [=](const std::vector<Tensor>& carry, const std::vector<Tensor>& x, const std::vector<Tensor>& consts) {
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

}  // namespace

LSTM::LSTM(std::int64_t units, LSTMOptions options)
    : Layer("LSTM", options.name, options.dtype), units_(units), options_(std::move(options)) {
  if (units_ <= 0) throw ValueError(error_prefix() + "units is " + std::to_string(units_) + "; it must be positive");
}

void LSTM::build(const Shape& input_shape) {
  detail::check_sequences(*this, {input_shape, DType::float32});
  kernel_ = add_weight("kernel", {input_shape[-1], 4 * units_}, options_.kernel_initializer);
  recurrent_kernel_ = add_weight("recurrent_kernel", {units_, 4 * units_}, options_.recurrent_initializer);
  if (options_.use_bias) {
    const Initializer bias =
        options_.unit_forget_bias ? forget_gate_bias(options_.bias_initializer, units_) : options_.bias_initializer;
    bias_ = add_weight("bias", {4 * units_}, bias);
  }
}

Tensor LSTM::call(const Tensor& x, bool training) {
  detail::check_sequences(*this, x.spec(), kernel_.shape()[0]);
  Tensor projected = ops::matmul(x, kernel_.value());
  if (bias_.defined()) projected = ops::add(projected, bias_.value());
  const Tensor steps = ops::transpose(projected, {1, 0, 2});  // time-major: the loop reads one row per step
  const Tensor zeros = Tensor::zeros({x.shape()[0], units_}, projected.dtype());
  return detail::run_recurrent_loop(lstm_step(units_, options_.activation, options_.recurrent_activation), steps,
                                    {zeros, zeros}, {recurrent_kernel_.value()},
                                    {.return_sequences = options_.return_sequences,
                                     .go_backwards = options_.go_backwards,
                                     .unroll = options_.unroll});
}

nlohmann::json LSTM::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["units"] = units_;
  detail::put_recurrent_options(config, options_, error_prefix());
  config["unit_forget_bias"] = options_.unit_forget_bias;
  return config;
}

LSTM LSTM::from_config(const nlohmann::json& config) {
  const std::string what = "layer class 'LSTM'";
  const serialization::LayerBase base = serialization::layer_base_from_config(config, what);
  LSTMOptions options{.name = base.name, .dtype = base.dtype};
  detail::read_recurrent_options(config, options, what);
  options.unit_forget_bias = serialization::optional<bool>(config, "unit_forget_bias", true, what);
  return LSTM(serialization::required<std::int64_t>(config, "units", what), std::move(options));
}

}  // namespace kestrel::layers
