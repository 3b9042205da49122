// The intra-op thread pool that kernels split their work over.
//
//   set_num_threads(2);                                   // default: the number of cores
//   parallel_for(n, /*grain=*/4096, [&](std::int64_t begin, std::int64_t end) { ... });
//
// The calling thread takes a share of the work, so a pool of size 1 runs everything inline.
// Idle workers spin for a few tens of microseconds before they sleep, and so does a caller
// waiting for the workers: a step's kernels follow each other closer than a sleeping thread
// wakes (train_step_bench, bench/README.md).
// A parallel_for issued from inside a pool's own work runs inline too, so nesting cannot
// deadlock. Work of one pool may use another: a strategy's replica threads (a pool of their own)
// run kernels on the intra-op pool.
//
//   SerialKernelsScope serial;   // on a replica's thread: parallel_for here runs inline
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kestrel {

class ThreadPool {
 public:
  /// A pool that runs work on `threads` threads in all (the caller counts as one).
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  /// Splits [0, n) into at most size() contiguous chunks of at least `grain` items and runs
  /// fn(begin, end) on each; returns when all are done. The first exception is rethrown.
  /// Runs fn(0, n) inline when called from inside this pool's work or under a SerialKernelsScope.
  /// The caller runs the first chunk, and every thread takes one chunk at a time: with n <= size()
  /// and grain 1 there are as many threads as chunks, so chunks may wait for each other (a chunk
  /// that waits holds its thread, and the chunks not yet taken still have threads to take them).
  void parallel_for(std::int64_t n, std::int64_t grain, const std::function<void(std::int64_t, std::int64_t)>& fn);

 private:
  struct Job;
  void worker_loop(int index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  Job* job_ = nullptr;
  std::uint64_t generation_ = 0;
  // generation_'s value (or stopping_ = true, as a change) for threads that spin instead of
  // sleeping on a condition variable: a step's kernels follow each other by a few microseconds,
  // less than a sleeping thread takes to wake.
  std::atomic<std::uint64_t> published_{0};
  bool stopping_ = false;
  std::mutex submit_mutex_;  // one parallel_for at a time per pool
};

/// Sets the size of the process-wide pool (>= 1); throws ValueError otherwise.
void set_num_threads(int threads);
/// Size of the process-wide pool.
int num_threads();
/// parallel_for on the process-wide pool, or inline (fn(0, n), one call) when called from inside
/// its work or under a SerialKernelsScope.
void parallel_for(std::int64_t n, std::int64_t grain, const std::function<void(std::int64_t, std::int64_t)>& fn);

/// The least work, in bytes moved, worth a chunk of its own for kernels that only move memory
/// (pad, concat, gather, one_hot, transpose): about 32 KiB keeps a chunk's hand-off cost small
/// against its copying.
inline constexpr std::int64_t kCopyGrainBytes = std::int64_t{1} << 15;

/// While it lives, every parallel_for called on the constructing thread runs inline: the whole
/// range in one call on that thread. Replica threads hold one when there are at least as many
/// replicas as cores, so that the replicas, not the kernels inside them, fill the cores instead
/// of queueing for the one intra-op pool. Thread-local (other threads are unaffected); scopes
/// nest, and parallel_for splits work again once the outermost one ends. Destroy it on the
/// thread that made it.
class SerialKernelsScope {
 public:
  SerialKernelsScope();
  ~SerialKernelsScope();
  SerialKernelsScope(const SerialKernelsScope&) = delete;
  SerialKernelsScope& operator=(const SerialKernelsScope&) = delete;
};

/// True while a SerialKernelsScope lives on this thread.
bool kernels_run_serially();

/// While it lives, the SerialKernelsScopes of the constructing thread are suspended: parallel_for
/// splits work again. A replica's thread holds one while it runs what every replica's values
/// meet in (distribute::merge_call), as the other replicas wait and leave the cores free.
class ParallelKernelsScope {
 public:
  ParallelKernelsScope();
  ~ParallelKernelsScope();
  ParallelKernelsScope(const ParallelKernelsScope&) = delete;
  ParallelKernelsScope& operator=(const ParallelKernelsScope&) = delete;

 private:
  int suspended_scopes_;
};

}  // namespace kestrel
