#include "strategies/strategy.h"

#include <exception>
#include <optional>
#include <string>

#include "framework/core/error.h"
#include "framework/distribute/replica_context.h"
#include "framework/distribute/replica_rendezvous.h"
#include "framework/distribute/replica_shards.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/shape_ops.h"
#include "strategies/all_reduce.h"

namespace kestrel::distribute {
namespace {

// The first failure by replica order; a cancellation only stands for itself when nothing else failed.
void rethrow_first_failure(const std::vector<std::exception_ptr>& errors) {
  std::exception_ptr cancelled;
  for (const std::exception_ptr& error : errors) {
    if (!error) continue;
    try {
      std::rethrow_exception(error);
    } catch (const ReplicaCancelledError&) {
      if (!cancelled) cancelled = error;
    } catch (...) {
      throw;
    }
  }
  if (cancelled) std::rethrow_exception(cancelled);
}

}  // namespace

Strategy::Strategy(std::string name, int replicas, std::optional<std::int64_t> memory_per_replica)
    : name_(std::move(name)), replicas_(replicas), memory_per_replica_(memory_per_replica) {
  if (replicas < 1) throw ValueError(name_ + ": the number of replicas must be >= 1, got " + std::to_string(replicas));
  if (memory_per_replica && *memory_per_replica <= 0) {
    throw ValueError(name_ + ": the memory per replica must be > 0 bytes, got " + std::to_string(*memory_per_replica));
  }
}

Strategy::~Strategy() = default;

void Strategy::check_replicas(const char* method, int count) const {
  if (count != replicas_) {
    throw ValueError(name_ + "." + method + ": got values from " + std::to_string(count) + " replicas, but " +
                     std::to_string(replicas_) + " run in sync; pass what run() returned");
  }
}

void Strategy::for_each_replica(const std::function<void(int replica)>& fn) const {
  if (!fn) throw ValueError(name_ + ".for_each_replica: fn is empty; pass the function each replica runs");
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(replicas_));
  auto run = [&](int replica) {
    try {
      fn(replica);
    } catch (...) {
      errors[static_cast<std::size_t>(replica)] = std::current_exception();
    }
  };
  if (replicas_ < num_threads()) {
    // Fewer replicas than cores: one after another, each with the whole intra-op pool for its kernels.
    for (int replica = 0; replica < replicas_; ++replica) run(replica);
  } else {
    // The replicas fill the cores: they run as the intra-op pool's work, a contiguous share of
    // them per thread, each with its kernels serial (the replicas, not the kernels, use the cores).
    parallel_for(replicas_, 1, [&](std::int64_t begin, std::int64_t end) {
      const SerialKernelsScope serial;
      for (std::int64_t replica = begin; replica < end; ++replica) run(static_cast<int>(replica));
    });
  }
  rethrow_first_failure(errors);
}

void Strategy::call_for_each_replica(const std::function<void(int replica)>& fn) const {
  if (replica_context() != nullptr) {
    throw ValueError(name_ + ": a step of the replicas was started from inside a replica (strategy.run or fit " +
                     "within a replica's step); run it from outside the replicas");
  }
  // A pool of as many threads as replicas, each replica one chunk of it: a replica waiting at a
  // merge point holds its thread, and the others still have theirs.
  std::call_once(replica_threads_made_, [&] { replica_threads_ = std::make_unique<ThreadPool>(replicas_); });
  ReplicaRendezvous rendezvous(replicas_);
  // When the replicas fill the cores, their kernels run serially inside each.
  const bool serial = replicas_ >= num_threads();
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(replicas_));
  // Run inline, the replicas would wait for each other forever: not even a caller's serial kernels may.
  const ParallelKernelsScope threads_of_their_own;
  replica_threads_->parallel_for(replicas_, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      const int replica = static_cast<int>(r);
      std::optional<SerialKernelsScope> serial_kernels;
      if (serial) serial_kernels.emplace();
      try {
        const DistributionScope in_scope(*this);
        const ReplicaScope as_replica(
            {.replica_id = replica, .num_replicas = replicas_, .distribution = this, .rendezvous = &rendezvous});
        fn(replica);
        rendezvous.finished(replica);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
        rendezvous.cancel(replica);
      }
    }
  });
  rethrow_first_failure(errors);
}

std::vector<Tensor> Strategy::all_reduce_sum(const std::vector<std::vector<Tensor>>& per_replica,
                                             std::vector<Tensor> reused) const {
  check_replicas("all_reduce_sum", static_cast<int>(per_replica.size()));
  return distribute::all_reduce_sum(per_replica, std::move(reused));
}

Tensor Strategy::all_gather(const std::vector<Tensor>& per_replica, Tensor reused) const {
  check_replicas("all_gather", static_cast<int>(per_replica.size()));
  std::size_t defined = 0;
  for (const Tensor& t : per_replica) defined += t.defined() ? 1 : 0;
  if (defined == 0) return Tensor();
  if (defined != per_replica.size()) {
    throw ValueError(name_ + ".all_gather: " + std::to_string(defined) + " of " + std::to_string(per_replica.size()) +
                     " replicas brought a value; every replica's step must bring the same parts to a merge point");
  }
  return per_replica.size() == 1 ? per_replica[0] : join_rows(per_replica, std::move(reused));
}

PerReplica<Tensor> Strategy::run(const std::function<Tensor(int replica)>& fn) const {
  PerReplica<Tensor> out;
  out.values.resize(static_cast<std::size_t>(replicas_));
  call_for_each_replica([&](int replica) { out.values[static_cast<std::size_t>(replica)] = fn(replica); });
  return out;
}

Tensor Strategy::reduce(ReduceOp op, const PerReplica<Tensor>& value, std::optional<int> axis) const {
  check_replicas("reduce", value.size());
  std::vector<std::vector<Tensor>> parts;
  std::int64_t counted = 0;  // elements along axis, over every replica (MEAN's divisor with an axis)
  for (const Tensor& t : value.values) {
    if (!axis) {
      parts.push_back({t});
      continue;
    }
    const int rank = t.rank();
    if (*axis < -rank || *axis >= rank) {
      throw ShapeError(name_ + ".reduce: axis " + std::to_string(*axis) + " is out of range for a replica's value " +
                       t.spec().to_string());
    }
    counted += t.shape()[*axis < 0 ? *axis + rank : *axis];
    parts.push_back({ops::sum(t, {.axes = {*axis}})});
  }
  Tensor total = all_reduce_sum(parts).at(0);
  if (op == ReduceOp::SUM) return total;
  const double divisor = axis ? static_cast<double>(counted) : static_cast<double>(replicas_);
  return total / divisor;
}

Tensor Strategy::gather(const PerReplica<Tensor>& value, int axis) const {
  check_replicas("gather", value.size());
  return ops::concat(value.values, axis);
}

DistributedDataset Strategy::experimental_distribute_dataset(const data::Dataset& dataset) const {
  return DistributedDataset::split_batches(dataset, replicas_);
}

DistributedDataset Strategy::distribute_datasets_from_function(
    const std::function<data::Dataset(const InputContext&)>& fn) const {
  // One machine, one input pipeline feeding every replica.
  const InputContext context{.num_input_pipelines = 1, .input_pipeline_id = 0, .num_replicas_in_sync = replicas_};
  return DistributedDataset::interleave_replicas(fn(context), replicas_);
}

}  // namespace kestrel::distribute
