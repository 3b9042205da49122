// The LSTM's cell, as Keras's LSTMCell: the weights of one time step and the step's math, which
// layers::LSTM runs over a sequence. The LSTM holds it under the attribute "cell" with Keras's
// name "lstm_cell", so the weights are named as Keras names them ("lstm/lstm_cell/kernel") and a
// Keras 3 weights file keeps them where Keras does (/layers/lstm/cell/vars/0).
//
//   auto cell = std::make_unique<detail::LSTMCell>(units, options);   // inside layers::LSTM
//   cell->maybe_build({batch, features});                              // one step's input shape
//   Tensor projected = cell->project_inputs(x);                        // [batch, time, 4 * units]
//   run_recurrent_loop(cell->step(), time_major(projected), cell->initial_state(batch, dtype),
//                      cell->step_constants(), {...});
//
// Internal to the LSTM: it takes no tensor on its own (Layer::call refuses), and is made again
// from the LSTM's config rather than from one of its own.
#pragma once

#include <cstdint>
#include <vector>

#include "framework/jit/scan.h"
#include "framework/layers/layer.h"
#include "framework/layers/lstm.h"

namespace kestrel::layers::detail {

class LSTMCell : public Layer {
 public:
  /// The cell of an LSTM with `units` outputs, taking its activations, initializers and bias
  /// options from the LSTM's.
  LSTMCell(std::int64_t units, const LSTMOptions& options);

  /// Creates kernel [features, 4 * units], recurrent_kernel [units, 4 * units] and bias
  /// [4 * units] for one step's input [batch, features].
  void build(const Shape& step_input_shape) override;

  /// x @ kernel + bias for every time step of x [batch, time, features] at once.
  Tensor project_inputs(const Tensor& x) const;
  /// One step on a time step of project_inputs() (the loop's x[0]) from the carry (h, c).
  ops::ScanFunction step() const;
  /// The constants step() reads: the recurrent kernel.
  std::vector<Tensor> step_constants() const;
  /// The state before the first step: h and c, zeros [batch, units].
  std::vector<Tensor> initial_state(std::int64_t batch, DType dtype) const;

  const Variable& kernel() const { return kernel_; }
  const Variable& recurrent_kernel() const { return recurrent_kernel_; }
  /// Undefined without use_bias.
  const Variable& bias() const { return bias_; }

 private:
  std::int64_t units_;
  ActivationFn activation_;
  ActivationFn recurrent_activation_;
  bool use_bias_;
  Initializer kernel_initializer_;
  Initializer recurrent_initializer_;
  Initializer bias_initializer_;
  bool unit_forget_bias_;
  Variable kernel_;
  Variable recurrent_kernel_;
  Variable bias_;
};

}  // namespace kestrel::layers::detail
