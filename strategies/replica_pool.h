// ReplicaPool: the worker threads a strategy runs its simulated replicas on.
//
//   ReplicaPool pool;                                   // num_threads() threads, the caller included
//   pool.run(8, [&](int replica) { step(replica); });   // returns when all 8 are done
//
// The threads are made once and reused by every run, so a training step costs no thread
// creation. Replicas are handed out one at a time to whichever thread is free, the caller
// included; which thread runs a replica is therefore not fixed, and replica code must not
// depend on it (the all-reduce sums in replica order, so results do not).
//
// Kernels inside a replica follow one rule, decided per run:
//   replicas >= size(): every replica runs under a SerialKernelsScope, so its kernels run
//                       single-threaded and the replicas themselves fill the cores;
//   replicas <  size(): kernels use the intra-op pool as usual, since replicas alone would
//                       leave cores idle.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kestrel::distribute {

class ReplicaPool {
 public:
  /// A pool with num_threads() threads in all (the cores, unless set_num_threads changed it). The
  /// size is fixed here: a later set_num_threads does not change it.
  ReplicaPool();
  /// A pool that runs replicas on `threads` threads in all, the caller of run counting as one,
  /// so ReplicaPool(1) runs every replica on the caller. Throws ValueError when threads < 1.
  explicit ReplicaPool(int threads);
  /// Joins the threads; a run in progress on another thread must have returned.
  ~ReplicaPool();
  ReplicaPool(const ReplicaPool&) = delete;
  ReplicaPool& operator=(const ReplicaPool&) = delete;

  /// Threads that run replicas, the caller of run included.
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  /// Runs fn(replica) once for every replica in [0, replicas) and returns when all are done.
  /// When some throw, every replica still runs, and then the exception of the lowest replica
  /// that threw is rethrown. Throws ValueError when replicas < 1 or fn is empty.
  ///
  /// Runs from several threads at once take turns. A run called from inside a replica (of any
  /// ReplicaPool) runs its replicas one after another on that thread, so nesting cannot deadlock.
  void run(int replicas, const std::function<void(int replica)>& fn);

 private:
  struct Job;
  void worker_loop();
  static void run_inline(int replicas, const std::function<void(int replica)>& fn);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  Job* job_ = nullptr;  // the run in progress, guarded by mutex_
  std::uint64_t generation_ = 0;
  bool stopping_ = false;
  std::mutex run_mutex_;  // one run at a time
};

}  // namespace kestrel::distribute
