// MultiWorkerMirroredStrategy: data-parallel training over several processes, one worker per MPI
// rank, each running its own local replicas (tf.distribute.MultiWorkerMirroredStrategy).
//
//   // mpirun -np 2 ./train      (2 workers x 4 local replicas = 8 replicas in sync)
//   distribute::MultiWorkerMirroredStrategy strategy({.local_replicas = 4});
//   auto scope = strategy.scope();
//   MyModel model;
//   model.compile({...});
//   model.fit(train, {.epochs = 3});   // worker w trains on its half of each global batch
//
// Every worker runs the same program on the same global batches: each takes its rows (the rows
// of its replicas among all the replicas in sync, worker 0's first), local replicas reduce in
// process, then the workers sum over MPI in a fixed order, so all of them apply the same update
// and end with the same weights, bit for bit, and a run is bitwise reproducible for a given
// workers x local replicas. Loss and metrics are aggregated over every worker, so callbacks
// decide alike on each. Started without mpirun, the strategy is a single worker and logs so.
#pragma once

#include "strategies/strategy.h"

namespace kestrel::distribute {

struct MultiWorkerOptions {
  /// Replicas each worker runs (>= 1): num_replicas_in_sync() is workers x local_replicas.
  int local_replicas = 1;
};

class MultiWorkerMirroredStrategy : public Strategy {
 public:
  /// The workers are this job's (Workers::of_this_job()); logs the cluster on "kestrel.distribute".
  explicit MultiWorkerMirroredStrategy(MultiWorkerOptions options = {});
};

}  // namespace kestrel::distribute
