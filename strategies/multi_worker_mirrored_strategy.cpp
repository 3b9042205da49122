#include "strategies/multi_worker_mirrored_strategy.h"

#include "framework/logging/logging.h"
#include "strategies/workers.h"

namespace kestrel::distribute {

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy(MultiWorkerOptions options)
    : Strategy("MultiWorkerMirroredStrategy", options.local_replicas, std::nullopt, Workers::of_this_job()) {
  auto log = logging::get("kestrel.distribute");
  if (!workers().over_mpi()) {
    log->info(
        "MultiWorkerMirroredStrategy: not started by mpirun, so this process is a single worker with {} "
        "local replica{}; start several with `mpirun -np <workers> <program>`",
        options.local_replicas, options.local_replicas == 1 ? "" : "s");
    return;
  }
  log->info("MultiWorkerMirroredStrategy: worker {} of {} ({}), {} local replica{} each, {} replicas in sync",
            worker_index(), num_workers(), workers().is_chief() ? "the chief" : "not the chief", options.local_replicas,
            options.local_replicas == 1 ? "" : "s", num_replicas_in_sync());
}

}  // namespace kestrel::distribute
