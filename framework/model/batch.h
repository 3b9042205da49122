// Batch: one batch as the train, test and predict steps see it.
//
//   void train_step(const Batch& batch) override {
//     Outputs y_pred = outputs_of(batch.x, /*training=*/true);
//     Tensor loss = compute_loss(batch, y_pred);
//     ...
//   }
#pragma once

#include "framework/core/tensor.h"
#include "framework/model/inputs.h"

namespace kestrel {

struct Batch {
  Inputs x;
  Outputs y;             ///< undefined for predict; named by output for a model of several
  Tensor sample_weight;  ///< [rows]; undefined when every sample weighs 1
  /// float32 [rows]: 1 for real samples, 0 for rows that pad a final partial batch up to the
  /// compiled batch size under jit_compile (so it neither compiles again nor drops samples).
  /// Undefined when no row is padding. compute_loss and the metrics leave padding rows out.
  Tensor row_mask;
};

}  // namespace kestrel
