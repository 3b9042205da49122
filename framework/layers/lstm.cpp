#include "framework/layers/lstm.h"

#include <memory>
#include <utility>

#include "framework/core/error.h"
#include "framework/layers/lstm_cell.h"
#include "framework/layers/recurrent_config.h"
#include "framework/layers/recurrent_loop.h"
#include "framework/ops/ops.h"

namespace kestrel::layers {

LSTM::LSTM(std::int64_t units, LSTMOptions options)
    : Layer("LSTM", options.name, options.dtype), units_(units), options_(std::move(options)) {
  if (units_ <= 0) throw ValueError(error_prefix() + "units is " + std::to_string(units_) + "; it must be positive");
  auto cell = std::make_unique<detail::LSTMCell>(units_, options_);
  cell_ = cell.get();
  adopt(std::move(cell), "cell");
}

void LSTM::build(const Shape& input_shape) {
  detail::check_sequences(*this, {input_shape, DType::float32});
  cell_->maybe_build({input_shape[0], input_shape[-1]});  // one time step's input, as Keras builds its cell
}

Tensor LSTM::call(const Tensor& x, bool training) {
  detail::check_sequences(*this, x.spec(), kernel().shape()[0]);
  // The input projection for all time steps at once, before the loop.
  const Tensor projected = cell_->project_inputs(x);
  const Tensor steps = ops::transpose(projected, {1, 0, 2});  // time-major: the loop reads one row per step
  return detail::run_recurrent_loop(cell_->step(), steps, cell_->initial_state(x.shape()[0], projected.dtype()),
                                    cell_->step_constants(),
                                    {.return_sequences = options_.return_sequences,
                                     .go_backwards = options_.go_backwards,
                                     .unroll = options_.unroll});
}

const Variable& LSTM::kernel() const { return cell_->kernel(); }
const Variable& LSTM::recurrent_kernel() const { return cell_->recurrent_kernel(); }
const Variable& LSTM::bias() const { return cell_->bias(); }

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
