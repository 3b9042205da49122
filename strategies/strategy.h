// Strategy: the base of Kestrel's distribution strategies (tf.distribute.Strategy): a scope that
// owns the variables created in it, replicas that run a function in sync, and the ways their
// values combine.
//
//   distribute::TPUStrategy strategy(distribute::TPUClusterResolver::local());   // 8 simulated cores
//   {
//     auto scope = strategy.scope();          // model, optimizer and metrics belong to the strategy
//     MyModel model;
//     model.compile({..., .jit_compile = true});
//     model.fit(train, {.epochs = 3});        // each global batch is split over the 8 replicas
//   }
//   auto per_replica = strategy.run([&](int replica) { return ops::sum(shards[replica]); });
//   Tensor total = strategy.reduce(distribute::ReduceOp::SUM, per_replica);
//
// Replicas are simulated: one process, one copy of each parameter in host memory, replicas run
// on the intra-op pool's threads (for_each_replica) or each on a thread of its own when they meet
// at merge points (call_for_each_replica), and reductions that add the replicas in a fixed
// order, so every run gives the same bits. A job of several processes (workers, started by
// mpirun: MultiWorkerMirroredStrategy, a TPU pod slice) runs each worker's local replicas so, and
// combines the workers' results over MPI, again in a fixed order (workers.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "framework/core/thread_pool.h"
#include "framework/data/dataset.h"
#include "framework/distribute/distributed_dataset.h"
#include "framework/distribute/distribution.h"
#include "framework/distribute/input_context.h"
#include "framework/distribute/per_replica.h"

namespace kestrel::distribute {

class Workers;

class Strategy : public Distribution {
 public:
  ~Strategy() override;
  Strategy(const Strategy&) = delete;
  Strategy& operator=(const Strategy&) = delete;

  /// Makes this strategy current on this thread until the returned scope ends: variables created
  /// meanwhile (layer weights, optimizer slots, metric state) belong to it.
  [[nodiscard]] DistributionScope scope() const { return DistributionScope(*this); }

  std::string name() const override { return name_; }
  int num_replicas_in_sync() const override { return local_replicas_ * num_workers(); }
  int num_local_replicas() const override { return local_replicas_; }
  int num_workers() const override;
  int worker_index() const override;
  /// The processes the replicas are spread over (this one alone unless started by mpirun).
  const Workers& workers() const { return *workers_; }
  std::optional<std::int64_t> memory_per_replica() const override { return memory_per_replica_; }

  /// Runs fn on every local replica (its local id as the argument), each on its own thread, and
  /// returns the results in replica order: a custom training loop's step
  /// (tf.distribute.Strategy.run). fn runs as a replica of one step, so optimizer.apply inside it
  /// sums every replica's gradients in sync and updates once.
  PerReplica<Tensor> run(const std::function<Tensor(int replica)>& fn) const;
  /// Combines the values of every replica in sync (each worker passes its local replicas'): SUM or
  /// MEAN across replicas; with an axis, that axis is reduced too (MEAN then averages over every
  /// replica's elements along it, as a global batch would). Every worker gets the same result.
  Tensor reduce(ReduceOp op, const PerReplica<Tensor>& value, std::optional<int> axis = std::nullopt) const;
  /// Every replica in sync's values concatenated along axis, in replica order, on every worker.
  Tensor gather(const PerReplica<Tensor>& value, int axis) const;

  /// A dataset of global batches, each split into one shard per replica.
  DistributedDataset experimental_distribute_dataset(const data::Dataset& dataset) const;
  /// A dataset made by fn for this machine's input pipeline, already batched per replica; each
  /// step gives every replica its own next batch.
  DistributedDataset distribute_datasets_from_function(
      const std::function<data::Dataset(const InputContext&)>& fn) const;

  void for_each_replica(const std::function<void(int replica)>& fn) const override;
  void call_for_each_replica(const std::function<void(int replica)>& fn) const override;
  using Distribution::all_gather;
  using Distribution::all_reduce_sum;
  std::vector<Tensor> all_reduce_sum(const std::vector<std::vector<Tensor>>& per_replica,
                                     std::vector<Tensor> reused) const override;
  void sum_over_workers(std::vector<Tensor>& local_sums) const override;
  Tensor all_gather(const std::vector<Tensor>& per_replica, Tensor reused) const override;
  void check_workers_agree(std::string_view what, const std::string& description) const override;
  void wait_for_workers(std::string_view why) const override;
  bool any_worker(bool value) const override;
  std::vector<double> gather_from_workers(std::span<const double> mine) const override;

 protected:
  /// `local_replicas` >= 1 on each of `workers`; memory_per_replica: the simulated device memory,
  /// or nullopt for none.
  Strategy(std::string name, int local_replicas, std::optional<std::int64_t> memory_per_replica,
           std::shared_ptr<const Workers> workers);
  Strategy(std::string name, int local_replicas, std::optional<std::int64_t> memory_per_replica);

 private:
  void check_replicas(const char* method, int count) const;
  /// all_gather over several workers: every worker's replicas' rows, in worker order.
  Tensor gather_over_workers(const std::vector<Tensor>& per_replica, Tensor reused) const;

  std::string name_;
  int local_replicas_;
  std::shared_ptr<const Workers> workers_;
  std::optional<std::int64_t> memory_per_replica_;
  // One thread per replica for call_for_each_replica, made on its first use.
  mutable std::once_flag replica_threads_made_;
  mutable std::unique_ptr<ThreadPool> replica_threads_;
};

}  // namespace kestrel::distribute
