// The GRU's cell, as Keras's GRUCell: the weights of one time step and the step's math, which
// layers::GRU runs over a sequence. The GRU holds it under the attribute "cell" with Keras's name
// "gru_cell", so the weights are named as Keras names them ("gru/gru_cell/kernel") and a Keras 3
// weights file keeps them where Keras does (/layers/gru/cell/vars/0).
//
//   auto cell = std::make_unique<detail::GRUCell>(units, options);    // inside layers::GRU
//   cell->maybe_build({batch, features});                              // one step's input shape
//   Tensor projected = cell->project_inputs(x);                        // [batch, time, 3 * units]
//   run_recurrent_loop(cell->step(), time_major(projected), cell->initial_state(batch, dtype),
//                      cell->step_constants(), {...});
//
// Internal to the GRU: it takes no tensor on its own (Layer::call refuses), and is made again from
// the GRU's config rather than from one of its own.
#pragma once

#include <cstdint>
#include <vector>

#include "framework/jit/scan.h"
#include "framework/layers/gru.h"
#include "framework/layers/layer.h"

namespace kestrel::layers::detail {

class GRUCell : public Layer {
 public:
  /// The cell of a GRU with `units` outputs, taking its activations, initializers, bias and
  /// reset_after options from the GRU's.
  GRUCell(std::int64_t units, const GRUOptions& options);

  /// Creates kernel [features, 3 * units], recurrent_kernel [units, 3 * units] and bias ([2, 3 *
  /// units] with reset_after: the input bias, then the recurrent one; else [3 * units]) for one
  /// step's input [batch, features].
  void build(const Shape& step_input_shape) override;

  /// x @ kernel + the input bias, for every time step of x [batch, time, features] at once.
  Tensor project_inputs(const Tensor& x) const;
  /// One step on a time step of project_inputs() (the loop's x[0]) from the carry (h).
  ops::ScanFunction step() const;
  /// The constants step() reads: with reset_after, the recurrent kernel and (with a bias) the
  /// recurrent bias [3 * units]; else the recurrent kernel's z and r columns [units, 2 * units]
  /// and its h columns [units, units].
  std::vector<Tensor> step_constants() const;
  /// The state before the first step: h, zeros [batch, units].
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
  bool reset_after_;
  Initializer kernel_initializer_;
  Initializer recurrent_initializer_;
  Initializer bias_initializer_;
  Variable kernel_;
  Variable recurrent_kernel_;
  Variable bias_;
};

}  // namespace kestrel::layers::detail
