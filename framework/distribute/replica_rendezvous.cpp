#include "framework/distribute/replica_rendezvous.h"

#include <utility>

#include "framework/core/thread_pool.h"

namespace kestrel::distribute {

ReplicaRendezvous::ReplicaRendezvous(int replicas) : replicas_(replicas) {
  if (replicas < 1) throw ValueError("ReplicaRendezvous: replicas must be >= 1, got " + std::to_string(replicas));
}

void ReplicaRendezvous::stop(std::string message) {
  if (stopped_) return;
  stopped_ = true;
  stop_message_ = std::move(message);
  met_.notify_all();
}

void ReplicaRendezvous::throw_stopped() const {
  if (!stop_message_.empty()) throw ValueError(stop_message_);
  throw ReplicaCancelledError("the step was stopped by a failure in another replica");
}

void ReplicaRendezvous::merge(int replica, std::string_view what, std::vector<Tensor> values,
                              const std::function<void(const PerReplicaValues&)>& fn) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (stopped_) throw_stopped();
  if (finished_ >= 0) {
    stop("replica " + std::to_string(replica) + " reached the merge point '" + std::string(what) + "' after replica " +
         std::to_string(finished_) +
         " had ended its step without it; every replica's step must reach the same merge points "
         "(optimizer.apply, the loss tracker, the metrics) in the same order");
    throw_stopped();
  }
  if (arrived_ == 0) {
    what_ = what;
    first_arrived_ = replica;
    values_.assign(static_cast<std::size_t>(replicas_), {});
  } else if (what != what_) {
    stop("replica " + std::to_string(replica) + " reached the merge point '" + std::string(what) + "' while replica " +
         std::to_string(first_arrived_) + " waits at '" + what_ +
         "'; every replica's step must reach the same merge points in the same order");
    throw_stopped();
  }
  values_[static_cast<std::size_t>(replica)] = std::move(values);
  if (++arrived_ < replicas_) {
    const std::uint64_t merge = merges_done_;
    met_.wait(lock, [&] { return merges_done_ != merge || stopped_; });
    if (merges_done_ == merge) throw_stopped();
    return;
  }

  // The last to arrive runs the merge. The others wait, so it has the cores: kernels split their
  // work again even on a replica that runs them serially.
  const PerReplicaValues all = std::move(values_);
  lock.unlock();
  try {
    const ParallelKernelsScope parallel;
    fn(all);
  } catch (...) {
    lock.lock();
    stop("");
    throw;
  }
  lock.lock();
  arrived_ = 0;
  ++merges_done_;
  met_.notify_all();
}

void ReplicaRendezvous::cancel(int /*replica*/) {
  std::lock_guard<std::mutex> lock(mutex_);
  stop("");
}

void ReplicaRendezvous::finished(int replica) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (finished_ < 0 || replica < finished_) finished_ = replica;
  if (arrived_ > 0 && !stopped_) {
    stop("replica " + std::to_string(replica) + " ended its step without reaching the merge point '" + what_ +
         "' where replica " + std::to_string(first_arrived_) +
         " waits; every replica's step must reach the same merge points (optimizer.apply, the loss tracker, the "
         "metrics) in the same order");
  }
}

}  // namespace kestrel::distribute
