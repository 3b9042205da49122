#include "strategies/tpu_strategy.h"

#include <charconv>

#include "framework/core/error.h"
#include "framework/jit/memory_plan.h"
#include "framework/logging/logging.h"
#include "strategies/workers.h"

namespace kestrel::distribute {
namespace {

constexpr std::int64_t kGiB = std::int64_t{1} << 30;

// One TPU generation as a pod slice's hosts see it.
struct Generation {
  std::string_view name;
  int cores_per_count;   // cores the accelerator type's number counts per device (v4 counts both of a chip's)
  int devices_per_host;  // replicas a host runs
  std::int64_t memory;   // per device
};
constexpr Generation kGenerations[] = {
    {.name = "v2", .cores_per_count = 1, .devices_per_host = 8, .memory = 8 * kGiB},
    {.name = "v3", .cores_per_count = 1, .devices_per_host = 8, .memory = 16 * kGiB},
    {.name = "v4", .cores_per_count = 2, .devices_per_host = 4, .memory = 32 * kGiB},
};

}  // namespace

TPUClusterResolver::TPUClusterResolver(std::string name, int cores_per_worker, std::int64_t memory_per_core,
                                       std::shared_ptr<const Workers> workers)
    : name_(std::move(name)),
      cores_per_worker_(cores_per_worker),
      memory_per_core_(memory_per_core),
      workers_(std::move(workers)) {}

int TPUClusterResolver::num_workers() const { return workers_->count(); }

TPUClusterResolver TPUClusterResolver::local(TPUClusterOptions options) {
  if (options.num_cores < 1) {
    throw ValueError("TPUClusterResolver: num_cores must be >= 1, got " + std::to_string(options.num_cores));
  }
  if (options.memory_per_core <= 0) {
    throw ValueError("TPUClusterResolver: memory_per_core must be > 0 bytes, got " +
                     std::to_string(options.memory_per_core));
  }
  return TPUClusterResolver("local", options.num_cores, options.memory_per_core, Workers::local());
}

TPUClusterResolver TPUClusterResolver::slice(std::string_view accelerator_type) {
  const std::string type(accelerator_type);
  const auto dash = accelerator_type.find('-');
  const Generation* generation = nullptr;
  for (const Generation& g : kGenerations) {
    if (dash != std::string_view::npos && accelerator_type.substr(0, dash) == g.name) generation = &g;
  }
  int count = 0;
  const std::string_view number = dash == std::string_view::npos ? "" : accelerator_type.substr(dash + 1);
  const auto parsed = std::from_chars(number.data(), number.data() + number.size(), count);
  if (generation == nullptr || number.empty() || parsed.ec != std::errc() ||
      parsed.ptr != number.data() + number.size() || count <= 0) {
    throw ValueError(
        "TPUClusterResolver: '" + type +
        "' is not an accelerator type Kestrel simulates; use v2-<cores>, v3-<cores> or v4-<cores>, such as "
        "v3-8 or v3-32");
  }
  const int per_host = generation->devices_per_host * generation->cores_per_count;
  if (count % per_host != 0) {
    throw ValueError("TPUClusterResolver: a " + std::string(generation->name) + " slice has a multiple of " +
                     std::to_string(per_host) + " cores (" + std::to_string(per_host) + " per host), so '" + type +
                     "' is not one");
  }
  const int hosts = count / per_host;
  std::shared_ptr<const Workers> workers = Workers::of_this_job();
  if (workers->count() != hosts) {
    throw ValueError("TPUClusterResolver: the slice " + type + " has " + std::to_string(hosts) + " host" +
                     (hosts == 1 ? "" : "s") + ", each one worker, so it runs as " + std::to_string(hosts) +
                     " MPI rank" + (hosts == 1 ? "" : "s") + " (mpirun -np " + std::to_string(hosts) +
                     " <program>), but this job has " + std::to_string(workers->count()) +
                     (workers->over_mpi() ? "" : " (not started by mpirun)"));
  }
  return TPUClusterResolver(type, generation->devices_per_host, generation->memory, std::move(workers));
}

TPUStrategy::TPUStrategy(const TPUClusterResolver& resolver)
    : Strategy("TPUStrategy", resolver.cores_per_worker(), resolver.memory_per_core(), resolver.workers()) {
  auto log = logging::get("kestrel.distribute");
  log->info("Found TPU system: {} cores ({}, simulated) on {} worker{}, {} cores per worker, {} of memory per core",
            resolver.num_cores(), resolver.master(), resolver.num_workers(), resolver.num_workers() == 1 ? "" : "s",
            resolver.cores_per_worker(), jit::format_bytes(resolver.memory_per_core()));
  log->info(
      "TPU topology: {} worker{} (hosts), {} cores each, {} replicas in sync, one program per step run on each "
      "core; this is worker {}",
      resolver.num_workers(), resolver.num_workers() == 1 ? "" : "s", resolver.cores_per_worker(),
      num_replicas_in_sync(), worker_index());
}

}  // namespace kestrel::distribute
