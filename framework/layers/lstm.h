// LSTM, as keras.layers.LSTM: a long short-term memory layer over sequences [batch, time, features]
// (channels last).
//
//   layers::LSTM lstm(64);                                   // [N,T,F] -> [N,64]: the last step's output
//   layers::LSTM seq(64, {.return_sequences = true});        // [N,T,F] -> [N,T,64]
//   layers::LSTM unrolled(64, {.unroll = true});             // the step's ops once per time step
//
// Each step, as Keras's LSTMCell, with the gates in Keras's order i, f, c, o:
//   z = x_t @ kernel + h @ recurrent_kernel + bias;   z_i, z_f, z_c, z_o = split(z, 4)
//   c = recurrent_activation(z_f) * c + recurrent_activation(z_i) * activation(z_c)
//   h = recurrent_activation(z_o) * activation(c)
// from h = c = 0; the output is h. The input projection x @ kernel + bias is computed for all time
// steps at once, before the loop.
//
// unroll = false (Keras's default) runs the steps as one loop op in the program (ops::scan): under
// jit_compile the step is traced and compiled once, whatever the sequence length, as XLA's While
// on a TPU. unroll = true emits the step's ops once per time step: no loop, a program that grows
// with the length. Both give the same values and gradients.
//
// Weights, held as in Keras by the layer's cell (layers/lstm_cell.h, attribute "cell", named
// "lstm_cell"), so an LSTM named "lstm" has "lstm/lstm_cell/kernel" [features, 4 * units]
// (glorot_uniform), "lstm/lstm_cell/recurrent_kernel" [units, 4 * units] (orthogonal) and
// "lstm/lstm_cell/bias" [4 * units] (zeros, the forget gate's quarter ones with unit_forget_bias).
// Not supported (yet): masking, dropout and recurrent_dropout, return_state, stateful, an initial state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "framework/layers/activations.h"
#include "framework/layers/initializers.h"
#include "framework/layers/layer.h"
#include "framework/layers/recurrent_layer.h"

namespace kestrel::layers {

namespace detail {
class LSTMCell;
}

struct LSTMOptions {
  ActivationFn activation = "tanh";
  ActivationFn recurrent_activation = "sigmoid";
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer recurrent_initializer = "orthogonal";
  Initializer bias_initializer = "zeros";
  /// Starts the forget gate's bias at 1 (its other gates from bias_initializer), as Jozefowicz et al.
  bool unit_forget_bias = true;
  /// Every step's output [batch, time, units], else the last one [batch, units].
  bool return_sequences = false;
  /// Reads the sequence from its last step to its first (the outputs come in that order too).
  bool go_backwards = false;
  /// Emits the step once per time step instead of a loop op (see above).
  bool unroll = false;
  std::string name;
  /// The precision policy (unset: the parent's, else the global one; layers/dtype_policy.h).
  std::optional<DTypePolicy> dtype;
};

/// Its weights: kernel() [features, 4 * units], recurrent_kernel() [units, 4 * units] and
/// bias() [4 * units], held by cell() (see above).
class LSTM : public detail::RecurrentLayer<detail::LSTMCell, LSTMOptions> {
 public:
  /// A layer with `units` outputs per step; units must be positive.
  explicit LSTM(std::int64_t units, LSTMOptions options = {});

  nlohmann::json get_config() const override;
  static LSTM from_config(const nlohmann::json& config);
};

}  // namespace kestrel::layers
