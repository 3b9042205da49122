// Worker batches: the batches of a worker that reads its own input pipeline (FILE or OFF
// auto-sharding), agreed with the other workers step by step (internal to fit / evaluate /
// predict).
//
//   auto source = detail::worker_batches(detail::dataset_source(mine, 0, "fit", "steps_per_epoch"), distribution, "fit");
//   while (std::optional<Batch> b = source->next()) { ... }   // the same number of steps on every worker
//
// Each worker's files can hold a different number of batches, yet every step is a collective:
// a worker that stopped while the others go on would leave them waiting. So at each step the
// workers tell each other whether they have a batch and what shape it has. The epoch ends when no
// worker has one. Until then a worker whose data has ended brings its last batch with every row
// masked (Batch::row_mask all 0): it keeps the step's shapes and counts for nothing, so every
// sample of every worker is seen once, as tf.distribute hands such a worker empty batches.
//
// The workers' batches of a step must have the same shapes but for their rows (a TPU slice runs
// one program on every host; the metrics join the workers' rows): a mismatch is a ValueError
// naming the workers and their batches, with the fix (pad to fixed shapes).
#pragma once

#include <memory>

#include "framework/distribute/distribution.h"
#include "framework/model/batch_source.h"

namespace kestrel::detail {

/// `own` read in step with the other workers of `distribution`; `method` names the caller in
/// errors. `distribution` must outlive the source.
std::unique_ptr<BatchSource> worker_batches(std::unique_ptr<BatchSource> own,
                                            const distribute::Distribution& distribution, const char* method);

}  // namespace kestrel::detail
