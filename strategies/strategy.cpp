#include "strategies/strategy.h"

#include <string>

#include "framework/core/error.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/shape_ops.h"
#include "strategies/all_reduce.h"
#include "strategies/replica_pool.h"

namespace kestrel::distribute {

Strategy::Strategy(std::string name, int replicas, std::optional<std::int64_t> memory_per_replica)
    : name_(std::move(name)), replicas_(replicas), memory_per_replica_(memory_per_replica) {
  if (replicas < 1) throw ValueError(name_ + ": the number of replicas must be >= 1, got " + std::to_string(replicas));
  if (memory_per_replica && *memory_per_replica <= 0) {
    throw ValueError(name_ + ": the memory per replica must be > 0 bytes, got " + std::to_string(*memory_per_replica));
  }
  pool_ = std::make_unique<distribute::ReplicaPool>();
}

Strategy::~Strategy() = default;

void Strategy::check_replicas(const char* method, int count) const {
  if (count != replicas_) {
    throw ValueError(name_ + "." + method + ": got values from " + std::to_string(count) + " replicas, but " +
                     std::to_string(replicas_) + " run in sync; pass what run() returned");
  }
}

void Strategy::for_each_replica(const std::function<void(int replica)>& fn) const { pool_->run(replicas_, fn); }

std::vector<Tensor> Strategy::all_reduce_sum(const std::vector<std::vector<Tensor>>& per_replica) const {
  check_replicas("all_reduce_sum", static_cast<int>(per_replica.size()));
  return distribute::all_reduce_sum(per_replica);
}

PerReplica<Tensor> Strategy::run(const std::function<Tensor(int replica)>& fn) const {
  PerReplica<Tensor> out;
  out.values.resize(static_cast<std::size_t>(replicas_));
  for_each_replica([&](int replica) { out.values[static_cast<std::size_t>(replica)] = fn(replica); });
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
