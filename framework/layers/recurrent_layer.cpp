#include "framework/layers/recurrent_layer.h"

#include <memory>
#include <string>
#include <utility>

#include "framework/core/error.h"
#include "framework/layers/gru_cell.h"
#include "framework/layers/lstm_cell.h"
#include "framework/layers/recurrent_loop.h"
#include "framework/ops/ops.h"

namespace kestrel::layers::detail {

template <class Cell, class Options>
RecurrentLayer<Cell, Options>::RecurrentLayer(const char* class_name, std::int64_t units, Options options)
    : Layer(class_name, options.name, options.dtype), units_(units), options_(std::move(options)) {
  if (units_ <= 0) throw ValueError(error_prefix() + "units is " + std::to_string(units_) + "; it must be positive");
  auto cell = std::make_unique<Cell>(units_, options_);
  cell_ = cell.get();
  adopt(std::move(cell), "cell");
}

template <class Cell, class Options>
void RecurrentLayer<Cell, Options>::build(const Shape& input_shape) {
  check_sequences(*this, {input_shape, DType::float32});
  cell_->maybe_build({input_shape[0], input_shape[-1]});  // one time step's input, as Keras builds its cell
}

template <class Cell, class Options>
Tensor RecurrentLayer<Cell, Options>::call(const Tensor& x, bool /*training*/) {
  check_sequences(*this, x.spec(), kernel().shape()[0]);
  // The input projection for all time steps at once, before the loop.
  const Tensor projected = cell_->project_inputs(x);
  const Tensor steps = ops::transpose(projected, {1, 0, 2});  // time-major: the loop reads one row per step
  return run_recurrent_loop(cell_->step(), steps, cell_->initial_state(x.shape()[0], projected.dtype()),
                            cell_->step_constants(),
                            {.return_sequences = options_.return_sequences,
                             .go_backwards = options_.go_backwards,
                             .unroll = options_.unroll});
}

template <class Cell, class Options>
const Variable& RecurrentLayer<Cell, Options>::kernel() const {
  return cell_->kernel();
}

template <class Cell, class Options>
const Variable& RecurrentLayer<Cell, Options>::recurrent_kernel() const {
  return cell_->recurrent_kernel();
}

template <class Cell, class Options>
const Variable& RecurrentLayer<Cell, Options>::bias() const {
  return cell_->bias();
}

template class RecurrentLayer<LSTMCell, LSTMOptions>;
template class RecurrentLayer<GRUCell, GRUOptions>;

}  // namespace kestrel::layers::detail
