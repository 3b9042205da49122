// What LSTM and GRU share, as Keras's RNN base does for them: a cell holding the weights (held
// under the attribute "cell", as Keras's rnn.cell), built for one time step's input, and the loop
// that runs the cell's step over the sequence.
//
//   class LSTM : public detail::RecurrentLayer<detail::LSTMCell, LSTMOptions> { ... };
//
// The cell type gives project_inputs(x) (x @ kernel + bias for every time step at once), step(),
// step_constants(), initial_state(batch, dtype) and the kernel, recurrent_kernel and bias. The
// members are instantiated for LSTM and GRU in recurrent_layer.cpp.
#pragma once

#include <cstdint>

#include "framework/layers/layer.h"

namespace kestrel::layers::detail {

template <class Cell, class Options>
class RecurrentLayer : public Layer {
 public:
  void build(const Shape& input_shape) override;
  /// The layer over x [batch, time, features].
  Tensor call(const Tensor& x, bool training) override;

  std::int64_t units() const { return units_; }
  const Options& options() const { return options_; }
  /// The input kernel [features, gates * units]; undefined until built.
  const Variable& kernel() const;
  /// [units, gates * units]; undefined until built.
  const Variable& recurrent_kernel() const;
  /// Undefined until built, or without use_bias.
  const Variable& bias() const;
  /// The cell holding the weights, as Keras's layer.cell.
  const Cell& cell() const { return *cell_; }

 protected:
  /// A layer of class `class_name` with `units` outputs per step; units must be positive.
  RecurrentLayer(const char* class_name, std::int64_t units, Options options);

  std::int64_t units_;
  Options options_;

 private:
  Cell* cell_;  // owned as a child, which stays put when the layer moves
};

}  // namespace kestrel::layers::detail
