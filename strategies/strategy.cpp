#include "strategies/strategy.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <optional>
#include <string>

#include "framework/core/error.h"
#include "framework/data/auto_shard.h"
#include "framework/distribute/replica_context.h"
#include "framework/distribute/replica_rendezvous.h"
#include "framework/distribute/replica_shards.h"
#include "framework/logging/logging.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/shape_ops.h"
#include "strategies/all_reduce.h"
#include "strategies/workers.h"

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

Strategy::Strategy(std::string name, int local_replicas, std::optional<std::int64_t> memory_per_replica)
    : Strategy(std::move(name), local_replicas, memory_per_replica, Workers::local()) {}

Strategy::Strategy(std::string name, int local_replicas, std::optional<std::int64_t> memory_per_replica,
                   std::shared_ptr<const Workers> workers)
    : name_(std::move(name)),
      local_replicas_(local_replicas),
      workers_(std::move(workers)),
      memory_per_replica_(memory_per_replica) {
  if (local_replicas < 1) {
    throw ValueError(name_ + ": the number of replicas must be >= 1, got " + std::to_string(local_replicas));
  }
  // The chief speaks for a job of several workers; the others only warn, and their callbacks
  // that print or write files do not run (Callback::chief_worker_only).
  if (!workers_->is_chief() && logging::level() < spdlog::level::warn) logging::set_level(spdlog::level::warn);
  if (memory_per_replica && *memory_per_replica <= 0) {
    throw ValueError(name_ + ": the memory per replica must be > 0 bytes, got " + std::to_string(*memory_per_replica));
  }
}

Strategy::~Strategy() = default;

int Strategy::num_workers() const { return workers_->count(); }
int Strategy::worker_index() const { return workers_->index(); }

void Strategy::check_replicas(const char* method, int count) const {
  if (count != local_replicas_) {
    throw ValueError(name_ + "." + method + ": got values from " + std::to_string(count) + " replicas, but " +
                     std::to_string(local_replicas_) + (num_workers() > 1 ? " run in this worker" : " run in sync") +
                     "; pass what run() returned");
  }
}

void Strategy::for_each_replica(const std::function<void(int replica)>& fn) const {
  if (!fn) throw ValueError(name_ + ".for_each_replica: fn is empty; pass the function each replica runs");
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(local_replicas_));
  auto run = [&](int replica) {
    try {
      fn(replica);
    } catch (...) {
      errors[static_cast<std::size_t>(replica)] = std::current_exception();
    }
  };
  if (local_replicas_ < num_threads()) {
    // Fewer replicas than cores: one after another, each with the whole intra-op pool for its kernels.
    for (int replica = 0; replica < local_replicas_; ++replica) run(replica);
  } else {
    // The replicas fill the cores: they run as the intra-op pool's work, a contiguous share of
    // them per thread, each with its kernels serial (the replicas, not the kernels, use the cores).
    parallel_for(local_replicas_, 1, [&](std::int64_t begin, std::int64_t end) {
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
  std::call_once(replica_threads_made_, [&] { replica_threads_ = std::make_unique<ThreadPool>(local_replicas_); });
  ReplicaRendezvous rendezvous(local_replicas_);
  // When the replicas fill the cores, their kernels run serially inside each.
  const bool serial = local_replicas_ >= num_threads();
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(local_replicas_));
  // Run inline, the replicas would wait for each other forever: not even a caller's serial kernels may.
  const ParallelKernelsScope threads_of_their_own;
  replica_threads_->parallel_for(local_replicas_, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      const int replica = static_cast<int>(r);
      std::optional<SerialKernelsScope> serial_kernels;
      if (serial) serial_kernels.emplace();
      try {
        const DistributionScope in_scope(*this);
        const ReplicaScope as_replica(
            {.replica_id = replica, .num_replicas = local_replicas_, .distribution = this, .rendezvous = &rendezvous});
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
  std::vector<Tensor> sums = distribute::all_reduce_sum(per_replica, std::move(reused));
  sum_over_workers(sums);
  return sums;
}

void Strategy::sum_over_workers(std::vector<Tensor>& local_sums) const {
  distribute::sum_over_workers(*workers_, local_sums);
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
  if (num_workers() == 1) return per_replica.size() == 1 ? per_replica[0] : join_rows(per_replica, std::move(reused));
  return gather_over_workers(per_replica, std::move(reused));
}

Tensor Strategy::gather_over_workers(const std::vector<Tensor>& per_replica, Tensor reused) const {
  const Tensor& first = per_replica[0];
  if (first.rank() == 0) {
    throw ShapeError(name_ + ".all_gather: a replica's value is a scalar; it joins the replicas' values along axis 0");
  }
  // Each worker's block is its replicas' rows. Workers may bring different numbers of rows (in a
  // custom loop, a worker whose data has ended brings none), so they tell each other their rows
  // and row shapes first; only the rows, never the row shapes, may differ.
  Shape row = first.shape();
  row[0] = 1;
  std::int64_t rows = 0;
  for (const Tensor& t : per_replica) {
    Shape its_row = t.rank() > 0 ? t.shape() : Shape{};
    if (its_row.rank() > 0) its_row[0] = 1;
    if (t.dtype() != first.dtype() || its_row != row) {
      throw ShapeError(name_ + ".all_gather: replica values " + first.spec().to_string() + " and " +
                       t.spec().to_string() +
                       " differ beyond their rows; every replica brings the same value to a merge point");
    }
    rows += t.shape()[0];
  }
  const double mine[] = {static_cast<double>(rows), static_cast<double>(row.numel()),
                         static_cast<double>(static_cast<int>(first.dtype()))};
  const std::vector<double> all = gather_from_workers(mine);
  std::int64_t largest = 0, total = 0;
  for (std::size_t w = 0; w < all.size(); w += 3) {
    if (all[w + 1] != mine[1] || all[w + 2] != mine[2]) {
      check_workers_agree(name_ + ".all_gather's values (the same but for their rows on every worker)",
                          first.spec().to_string());
      throw ShapeError(name_ + ".all_gather: the workers' values differ beyond their rows");  // not reached
    }
    largest = std::max(largest, static_cast<std::int64_t>(all[w]));
    total += static_cast<std::int64_t>(all[w]);
  }
  const std::size_t row_bytes = static_cast<std::size_t>(row.numel()) * size_of(first.dtype());
  const auto block = static_cast<std::size_t>(largest) * row_bytes;
  Shape shape = first.shape();
  shape[0] = total;
  Tensor out = Tensor::empty_or_reused(std::move(reused), shape, first.dtype());
  // Equal blocks (every step of fit) gather in place into the output; unequal ones through a
  // buffer of the largest block per worker.
  const bool equal = total == largest * num_workers();
  std::vector<std::byte> staging(equal ? 0 : block * static_cast<std::size_t>(num_workers()));
  std::byte* blocks = equal ? static_cast<std::byte*>(out.view().data) : staging.data();
  std::byte* to = blocks + block * static_cast<std::size_t>(worker_index());
  for (const Tensor& t : per_replica) {
    if (t.nbytes() > 0) std::memcpy(to, t.raw_data(), t.nbytes());
    to += t.nbytes();
  }
  workers_->gather_in_place({blocks, block * static_cast<std::size_t>(num_workers())});
  if (equal) return out;
  auto* compact = static_cast<std::byte*>(out.view().data);
  for (int w = 0; w < num_workers(); ++w) {
    const std::size_t bytes = static_cast<std::size_t>(all[static_cast<std::size_t>(3 * w)]) * row_bytes;
    if (bytes > 0) std::memcpy(compact, blocks + block * static_cast<std::size_t>(w), bytes);
    compact += bytes;
  }
  return out;
}

void Strategy::check_workers_agree(std::string_view what, const std::string& description) const {
  workers_->check_same(what, description);
}

void Strategy::wait_for_workers(std::string_view why) const { workers_->barrier(why); }

bool Strategy::any_worker(bool value) const { return workers_->max(value ? 1 : 0) != 0; }

std::vector<double> Strategy::gather_from_workers(std::span<const double> mine) const {
  std::vector<double> all(mine.size() * static_cast<std::size_t>(num_workers()));
  std::copy(mine.begin(), mine.end(), all.begin() + static_cast<std::ptrdiff_t>(mine.size()) * worker_index());
  workers_->gather_in_place(std::as_writable_bytes(std::span<double>(all)));
  return all;
}

PerReplica<Tensor> Strategy::run(const std::function<Tensor(int replica)>& fn) const {
  PerReplica<Tensor> out;
  out.values.resize(static_cast<std::size_t>(local_replicas_));
  call_for_each_replica([&](int replica) { out.values[static_cast<std::size_t>(replica)] = fn(replica); });
  return out;
}

Tensor Strategy::reduce(ReduceOp op, const PerReplica<Tensor>& value, std::optional<int> axis) const {
  check_replicas("reduce", value.size());
  std::vector<std::vector<Tensor>> parts;
  std::int64_t counted = 0;  // elements along axis, over this worker's replicas
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
  // MEAN with an axis divides by the elements along it over every replica in sync.
  std::int64_t counted_in_sync[] = {counted};
  if (axis) workers_->sum(counted_in_sync);
  const double divisor = axis ? static_cast<double>(counted_in_sync[0]) : static_cast<double>(num_replicas_in_sync());
  return total / divisor;
}

Tensor Strategy::gather(const PerReplica<Tensor>& value, int axis) const {
  check_replicas("gather", value.size());
  if (num_workers() == 1) return ops::concat(value.values, axis);
  // Over workers, the rows of all_gather: the axis is moved to the front and back.
  const int rank = value.values.at(0).rank();
  if (axis < -rank || axis >= rank) {
    throw ShapeError(name_ + ".gather: axis " + std::to_string(axis) + " is out of range for a replica's value " +
                     value.values[0].spec().to_string());
  }
  if (axis < 0) axis += rank;
  std::vector<int> to_front = {axis};
  for (int d = 0; d < rank; ++d) {
    if (d != axis) to_front.push_back(d);
  }
  std::vector<int> back(static_cast<std::size_t>(rank));
  for (int d = 0; d < rank; ++d) back[static_cast<std::size_t>(to_front[static_cast<std::size_t>(d)])] = d;
  std::vector<Tensor> fronted;
  for (const Tensor& t : value.values) fronted.push_back(axis == 0 ? t : ops::transpose(t, to_front));
  const Tensor gathered = all_gather(fronted);
  return axis == 0 ? gathered : ops::transpose(gathered, back);
}

DistributedDataset Strategy::experimental_distribute_dataset(const data::Dataset& dataset) const {
  const data::ShardedDataset sharded = data::auto_shard(dataset, num_workers(), worker_index());
  if (sharded.per_worker()) {
    // FILE or OFF: each worker reads its own part of each global batch, for its replicas.
    return DistributedDataset::split_worker_batches(sharded.dataset, local_replicas_, *this);
  }
  // DATA: every worker reads the global batches and keeps its replicas' rows.
  return DistributedDataset::split_batches(
      dataset, local_replicas_, {.first_replica = first_local_replica(), .replicas_in_sync = num_replicas_in_sync()});
}

DistributedDataset Strategy::distribute_datasets_from_function(
    const std::function<data::Dataset(const InputContext&)>& fn) const {
  // One input pipeline per worker, feeding its replicas.
  const InputContext context{.num_input_pipelines = num_workers(),
                             .input_pipeline_id = worker_index(),
                             .num_replicas_in_sync = num_replicas_in_sync()};
  return DistributedDataset::interleave_replicas(fn(context), local_replicas_, this);
}

}  // namespace kestrel::distribute
