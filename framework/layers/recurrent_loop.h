// The time loop of the recurrent layers (LSTM, GRU), as Keras's backend rnn(): a step function run
// over a sequence, either unrolled (the step's ops emitted once per time step) or as one loop op in
// the program (ops::scan), with the same step, so both give the same values and gradients.
//
//   Tensor h = layers::detail::run_recurrent_loop(step, projected, {h0, c0}, {recurrent_kernel},
//                                                 {.return_sequences = true});   // [batch, time, units]
//
// The step takes the carried state, the time step's slice of the inputs and the constants (ops::scan's
// arguments); the layer's output is state 0, as Keras's cells output their first state.
#pragma once

#include <vector>

#include "framework/core/tensor.h"
#include "framework/jit/scan.h"

namespace kestrel {
class Layer;
}

namespace kestrel::layers::detail {

/// Throws ShapeError (naming the layer) unless `input` is [batch, time >= 1, features]; with
/// `features` >= 0, the features must be that many (what the layer was built for). TypeError for
/// a non-floating dtype.
void check_sequences(const Layer& layer, const TensorSpec& input, std::int64_t features = -1);

struct RecurrentLoopOptions {
  bool return_sequences = false;  ///< every step's output, else the last one
  bool go_backwards = false;      ///< run from the last time step to the first
  bool unroll = false;            ///< one copy of the step per time step, else a loop op
};

/// Runs `step` over `inputs` [time, batch, ...] (time-major) from `initial_state`. The output is
/// state 0 after the last step [batch, units], or, with return_sequences, after every step
/// [batch, time, units] in the order the steps ran (reversed with go_backwards, as in Keras).
Tensor run_recurrent_loop(const ops::ScanFunction& step, const Tensor& inputs, const std::vector<Tensor>& initial_state,
                          const std::vector<Tensor>& consts, const RecurrentLoopOptions& options);

}  // namespace kestrel::layers::detail
