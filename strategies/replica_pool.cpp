#include "strategies/replica_pool.h"

#include <atomic>
#include <climits>
#include <exception>
#include <string>

#include "framework/core/error.h"
#include "framework/core/thread_pool.h"

namespace kestrel::distribute {
namespace {

// True on a thread while it runs replica code: always on pool threads, and on a caller during its
// share. A run started there would wait for threads that may be busy waiting for it, so it runs
// inline instead.
thread_local bool t_inside_replica = false;

class InsideReplicaFlag {
 public:
  InsideReplicaFlag() { t_inside_replica = true; }
  ~InsideReplicaFlag() { t_inside_replica = false; }
  InsideReplicaFlag(const InsideReplicaFlag&) = delete;
  InsideReplicaFlag& operator=(const InsideReplicaFlag&) = delete;
};

// The exception of the lowest replica that threw, of those one thread (or all) ran.
struct LowestReplicaError {
  int replica = INT_MAX;
  std::exception_ptr error;

  void keep(int failed_replica, std::exception_ptr failure) {
    if (failure && failed_replica < replica) {
      replica = failed_replica;
      error = std::move(failure);
    }
  }
  void merge(const LowestReplicaError& other) { keep(other.replica, other.error); }
};

}  // namespace

struct ReplicaPool::Job {
  const std::function<void(int)>* fn;
  int replicas;
  bool serial_kernels;               // replicas >= size(): see the rule in the header
  std::atomic<int> next_replica{0};  // the next replica nobody has claimed
  int workers_inside = 0;            // guarded by mutex_; the job outlives every worker that joined it
  LowestReplicaError error;          // guarded by mutex_

  // Claims replicas until none is left and runs them; returns the lowest failure among them.
  LowestReplicaError run_share() {
    LowestReplicaError failed;
    for (int r = next_replica.fetch_add(1); r < replicas; r = next_replica.fetch_add(1)) {
      try {
        if (serial_kernels) {
          SerialKernelsScope serial;
          (*fn)(r);
        } else {
          (*fn)(r);
        }
      } catch (...) {
        failed.keep(r, std::current_exception());
      }
    }
    return failed;
  }
};

ReplicaPool::ReplicaPool() : ReplicaPool(num_threads()) {}

ReplicaPool::ReplicaPool(int threads) {
  if (threads < 1) {
    throw ValueError("ReplicaPool: threads must be >= 1 (the caller of run counts as one), got " +
                     std::to_string(threads));
  }
  workers_.reserve(static_cast<std::size_t>(threads - 1));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ReplicaPool::~ReplicaPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ReplicaPool::worker_loop() {
  t_inside_replica = true;
  std::uint64_t seen = 0;
  for (;;) {
    Job* job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || (job_ != nullptr && generation_ != seen); });
      if (stopping_) return;
      seen = generation_;
      job = job_;
      ++job->workers_inside;
    }
    LowestReplicaError failed = job->run_share();
    std::lock_guard<std::mutex> lock(mutex_);
    job->error.merge(failed);
    // Drop this thread's hold on the exception before run() can return: the last holder destroys
    // it, and that must not race with the caller reading the exception it catches.
    failed.error = nullptr;
    if (--job->workers_inside == 0) done_.notify_all();
  }
}

void ReplicaPool::run_inline(int replicas, const std::function<void(int replica)>& fn) {
  LowestReplicaError failed;
  for (int r = 0; r < replicas; ++r) {
    try {
      fn(r);
    } catch (...) {
      failed.keep(r, std::current_exception());
    }
  }
  if (failed.error) std::rethrow_exception(failed.error);
}

void ReplicaPool::run(int replicas, const std::function<void(int replica)>& fn) {
  if (replicas < 1) {
    throw ValueError("ReplicaPool::run: replicas must be >= 1, got " + std::to_string(replicas) +
                     "; a strategy has at least one replica");
  }
  if (!fn) throw ValueError("ReplicaPool::run: fn is empty; pass the function each replica runs");
  if (t_inside_replica) {
    run_inline(replicas, fn);
    return;
  }

  std::lock_guard<std::mutex> one_run_at_a_time(run_mutex_);
  Job job;
  job.fn = &fn;
  job.replicas = replicas;
  job.serial_kernels = replicas >= size();
  // One replica, or no other threads: nothing to hand out, so nobody is woken.
  const bool share = replicas > 1 && !workers_.empty();
  if (share) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &job;
      ++generation_;
    }
    wake_.notify_all();
  }

  // The caller claims replicas like any worker; when its loop ends every replica has been
  // claimed, and it waits only for the workers still running theirs.
  LowestReplicaError failed;
  {
    InsideReplicaFlag inside;
    failed = job.run_share();
  }
  if (share) {
    std::unique_lock<std::mutex> lock(mutex_);
    job_ = nullptr;  // workers that wake from now on find nothing to join
    done_.wait(lock, [&] { return job.workers_inside == 0; });
    failed.merge(job.error);
  }
  if (failed.error) std::rethrow_exception(failed.error);
}

}  // namespace kestrel::distribute
