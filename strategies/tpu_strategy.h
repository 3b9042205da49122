// TPUStrategy and TPUClusterResolver: simulated TPU cores, each with its own simulated memory,
// replicating a model as tf.distribute.TPUStrategy does: 8 cores of a TPU v3-8 in this process,
// or a pod slice such as a v3-32 (4 hosts x 8 cores) as one process per host under mpirun.
//
//   distribute::TPUStrategy strategy(distribute::TPUClusterResolver::local());
//   // [kestrel.distribute] Found TPU system: 8 cores (local, simulated) on 1 worker, 8 cores per worker, ...
//
//   // mpirun -np 4 ./train
//   distribute::TPUStrategy pod(distribute::TPUClusterResolver::slice("v3-32"));
//   // [kestrel.distribute] Found TPU system: 32 cores (v3-32, simulated) on 4 workers, 8 cores per worker, ...
//
// A compiled step whose planned memory per replica exceeds a core's memory fails at compile time
// with the figures (ResourceExhausted), as an XLA program that does not fit in HBM does.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "strategies/strategy.h"

namespace kestrel::distribute {

struct TPUClusterOptions {
  /// Simulated cores (replicas in sync), >= 1.
  int num_cores = 8;
  /// Simulated memory per core in bytes (a TPU v3 core has 16 GiB of HBM).
  std::int64_t memory_per_core = std::int64_t{16} << 30;
};

/// Where the TPU system is: the local simulated one, or a simulated pod slice over this job's
/// MPI ranks.
class TPUClusterResolver {
 public:
  /// The local simulated TPU system: one host with `options.num_cores` cores.
  static TPUClusterResolver local(TPUClusterOptions options = {});
  /// A simulated pod slice by its accelerator type: "v2-<cores>" and "v3-<cores>" (8 cores per
  /// host; 8 and 16 GiB per core) and "v4-<cores>" (4 chips per host, each one device of two
  /// cores; 32 GiB per chip). Each host is one worker, so the job runs as one MPI rank per host
  /// (mpirun -np <hosts>); a job of another size is a ValueError saying which it needs.
  static TPUClusterResolver slice(std::string_view accelerator_type);

  /// "local" for the local system, else the slice's accelerator type ("v3-32").
  std::string master() const { return name_; }
  /// The replicas, one per TPU device: a v2 or v3 core, a v4 chip (whose two cores are one device,
  /// as TensorFlow counts them: a v4-32 has 16).
  int num_cores() const { return cores_per_worker_ * num_workers(); }
  int cores_per_worker() const { return cores_per_worker_; }
  int num_workers() const;
  std::int64_t memory_per_core() const { return memory_per_core_; }
  /// The processes the slice's hosts are: this one alone for the local system.
  const std::shared_ptr<const Workers>& workers() const { return workers_; }

 private:
  TPUClusterResolver(std::string name, int cores_per_worker, std::int64_t memory_per_core,
                     std::shared_ptr<const Workers> workers);

  std::string name_;
  int cores_per_worker_;
  std::int64_t memory_per_core_;
  std::shared_ptr<const Workers> workers_;
};

class TPUStrategy : public Strategy {
 public:
  /// Connects to the resolved system and logs its topology on "kestrel.distribute".
  explicit TPUStrategy(const TPUClusterResolver& resolver);
};

}  // namespace kestrel::distribute
