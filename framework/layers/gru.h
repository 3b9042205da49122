// GRU, as keras.layers.GRU: a gated recurrent unit layer over sequences [batch, time, features]
// (channels last).
//
//   layers::GRU gru(64);                                     // [N,T,F] -> [N,64]: the last step's output
//   layers::GRU seq(64, {.return_sequences = true});         // [N,T,F] -> [N,T,64]
//   layers::GRU v1(64, {.reset_after = false});              // the original formulation (one bias)
//
// Each step, as Keras's GRUCell, with the gates in Keras's order z (update), r (reset), h:
//   x_z, x_r, x_h = split(x_t @ kernel + input_bias, 3)
//   r_z, r_r, r_h = split(h @ recurrent_kernel + recurrent_bias, 3)
//   z = recurrent_activation(x_z + r_z);  r = recurrent_activation(x_r + r_r)
//   hh = activation(x_h + r * r_h)                         (reset_after, Keras 3's default)
//   hh = activation(x_h + (r * h) @ recurrent_kernel[:, 2u:])  (reset_after = false)
//   h = z * h + (1 - z) * hh
// from h = 0; the output is h. The input projection is computed for all time steps at once.
//
// unroll = false (Keras's default) runs the steps as one loop op (ops::scan), compiled once whatever
// the length; unroll = true emits the step once per time step. Both give the same values and gradients.
//
// Weights, held as in Keras by the layer's cell (layers/gru_cell.h, attribute "cell", named
// "gru_cell"), so a GRU named "gru" has "gru/gru_cell/kernel" [features, 3 * units]
// (glorot_uniform), "gru/gru_cell/recurrent_kernel" [units, 3 * units] (orthogonal) and
// "gru/gru_cell/bias" (zeros): [2, 3 * units] with reset_after (row 0 the input bias, row 1 the
// recurrent one), else [3 * units].
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
class GRUCell;
}

struct GRUOptions {
  ActivationFn activation = "tanh";
  ActivationFn recurrent_activation = "sigmoid";
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer recurrent_initializer = "orthogonal";
  Initializer bias_initializer = "zeros";
  /// Every step's output [batch, time, units], else the last one [batch, units].
  bool return_sequences = false;
  /// Reads the sequence from its last step to its first (the outputs come in that order too).
  bool go_backwards = false;
  /// Emits the step once per time step instead of a loop op (see above).
  bool unroll = false;
  /// Applies the reset gate after the recurrent matmul (Keras 3's and cuDNN's form), else before.
  bool reset_after = true;
  std::string name;
  /// The precision policy (unset: the parent's, else the global one; layers/dtype_policy.h).
  std::optional<DTypePolicy> dtype;
};

/// Its weights: kernel() [features, 3 * units], recurrent_kernel() [units, 3 * units] and
/// bias() [2, 3 * units] with reset_after, else [3 * units], held by cell() (see above).
class GRU : public detail::RecurrentLayer<detail::GRUCell, GRUOptions> {
 public:
  /// A layer with `units` outputs per step; units must be positive.
  explicit GRU(std::int64_t units, GRUOptions options = {});

  nlohmann::json get_config() const override;
  static GRU from_config(const nlohmann::json& config);
};

}  // namespace kestrel::layers
