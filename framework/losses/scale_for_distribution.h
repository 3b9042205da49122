// scale_loss_for_distribution: a replica's loss as its share of the global batch's (Keras's
// keras.losses.scale_loss_for_distribution).
//
//   Tensor compute_loss(const Batch& batch, const Outputs& y_pred) override {
//     Tensor aux = ops::mean(ops::square(y_pred));                 // a mean over this replica's rows
//     return Model::compute_loss(batch, y_pred) + losses::scale_loss_for_distribution(aux * 0.01);
//   }
//
// When a strategy's replicas each run a step on a shard of the global batch, their gradients are
// summed; each replica's loss must therefore be its share of the global batch's, not a whole
// mean. Model::compute_loss scales the compiled loss so; a term a step adds on its own goes
// through this function to be scaled alike. The share is the part of the global batch's counted
// elements the replica holds (1 / replicas when they hold equal real rows). Outside a replica
// step (no strategy, one replica, a compiled replica), the loss comes back as it is.
#pragma once

#include "framework/core/tensor.h"

namespace kestrel::losses {

/// loss times this replica's share of the global batch (see the top); loss itself outside one.
Tensor scale_loss_for_distribution(const Tensor& loss);

}  // namespace kestrel::losses
