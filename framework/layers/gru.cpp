#include "framework/layers/gru.h"

#include <utility>
#include <vector>

#include "framework/core/error.h"
#include "framework/layers/recurrent_config.h"
#include "framework/layers/recurrent_loop.h"
#include "framework/ops/ops.h"

namespace kestrel::layers {
namespace {

// One GRU step on x_t @ kernel + input_bias (x[0], [batch, 3 * units]), from carry (h). The consts
// are, with reset_after, the recurrent kernel [units, 3 * units] and, with a bias, the recurrent
// bias [3 * units]; without reset_after, the recurrent kernel's z and r columns [units, 2 * units]
// and its h columns [units, units].
ops::ScanFunction gru_step(std::int64_t units, bool reset_after, ActivationFn activation,
                           ActivationFn recurrent_activation) {
  return [=](const std::vector<Tensor>& carry, const std::vector<Tensor>& x, const std::vector<Tensor>& consts) {
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

}  // namespace

GRU::GRU(std::int64_t units, GRUOptions options)
    : Layer("GRU", options.name, options.dtype), units_(units), options_(std::move(options)) {
  if (units_ <= 0) throw ValueError(error_prefix() + "units is " + std::to_string(units_) + "; it must be positive");
}

void GRU::build(const Shape& input_shape) {
  detail::check_sequences(*this, {input_shape, DType::float32});
  kernel_ = add_weight("kernel", {input_shape[-1], 3 * units_}, options_.kernel_initializer);
  recurrent_kernel_ = add_weight("recurrent_kernel", {units_, 3 * units_}, options_.recurrent_initializer);
  if (options_.use_bias) {
    const Shape shape = options_.reset_after ? Shape{2, 3 * units_} : Shape{3 * units_};
    bias_ = add_weight("bias", shape, options_.bias_initializer);
  }
}

Tensor GRU::call(const Tensor& x, bool training) {
  detail::check_sequences(*this, x.spec(), kernel_.shape()[0]);
  const bool reset_after = options_.reset_after;
  const Tensor recurrent = recurrent_kernel_.value();
  Tensor projected = ops::matmul(x, kernel_.value());
  std::vector<Tensor> consts;
  if (reset_after) {
    consts.push_back(recurrent);
  } else {
    consts.push_back(ops::slice(recurrent, {0, 0}, {-1, 2 * units_}));
    consts.push_back(ops::slice(recurrent, {0, 2 * units_}, {-1, units_}));
  }
  if (bias_.defined()) {
    const Tensor bias = bias_.value();
    if (reset_after) {
      projected = ops::add(projected, ops::reshape(ops::slice(bias, {0, 0}, {1, -1}), {3 * units_}));
      consts.push_back(ops::reshape(ops::slice(bias, {1, 0}, {1, -1}), {3 * units_}));
    } else {
      projected = ops::add(projected, bias);
    }
  }
  const Tensor steps = ops::transpose(projected, {1, 0, 2});  // time-major: the loop reads one row per step
  const Tensor zeros = Tensor::zeros({x.shape()[0], units_}, projected.dtype());
  return detail::run_recurrent_loop(gru_step(units_, reset_after, options_.activation, options_.recurrent_activation),
                                    steps, {zeros}, consts,
                                    {.return_sequences = options_.return_sequences,
                                     .go_backwards = options_.go_backwards,
                                     .unroll = options_.unroll});
}

nlohmann::json GRU::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["units"] = units_;
  detail::put_recurrent_options(config, options_, error_prefix());
  config["reset_after"] = options_.reset_after;
  return config;
}

GRU GRU::from_config(const nlohmann::json& config) {
  const std::string what = "layer class 'GRU'";
  const serialization::LayerBase base = serialization::layer_base_from_config(config, what);
  GRUOptions options{.name = base.name, .dtype = base.dtype};
  detail::read_recurrent_options(config, options, what);
  options.reset_after = serialization::optional<bool>(config, "reset_after", true, what);
  return GRU(serialization::required<std::int64_t>(config, "units", what), std::move(options));
}

}  // namespace kestrel::layers
