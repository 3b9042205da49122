#include "framework/core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <string>

#include "framework/core/error.h"

namespace kestrel {
namespace {
// The pool whose work this thread is running (a worker's, or the caller's chunks), if any.
thread_local const ThreadPool* t_working_for = nullptr;
thread_local int t_serial_kernel_scopes = 0;  // SerialKernelsScopes alive on this thread

// pool.parallel_for runs fn(0, n) on the calling thread instead of splitting it: work given to a
// pool from inside its own work would wait for threads that are busy running it.
bool must_run_inline(const ThreadPool* pool) { return t_working_for == pool || t_serial_kernel_scopes > 0; }

// How long a thread spins for new work, or for the workers to finish a job, before it sleeps.
constexpr auto kSpinFor = std::chrono::microseconds(50);

// Spins until done() or kSpinFor has passed; true when done().
template <class Done>
bool spin_until(const Done& done) {
  const auto until = std::chrono::steady_clock::now() + kSpinFor;
  for (int i = 1;; ++i) {
    if (done()) return true;
    // The clock costs more than a check; read it every 64.
    if (i % 64 == 0 && std::chrono::steady_clock::now() > until) return false;
    std::this_thread::yield();
  }
}

// Marks the thread as running `pool`'s work for the guard's lifetime.
class WorkingFor {
 public:
  explicit WorkingFor(const ThreadPool* pool) : previous_(t_working_for) { t_working_for = pool; }
  ~WorkingFor() { t_working_for = previous_; }
  WorkingFor(const WorkingFor&) = delete;
  WorkingFor& operator=(const WorkingFor&) = delete;

 private:
  const ThreadPool* previous_;
};
}  // namespace

SerialKernelsScope::SerialKernelsScope() { ++t_serial_kernel_scopes; }
SerialKernelsScope::~SerialKernelsScope() { --t_serial_kernel_scopes; }
bool kernels_run_serially() { return t_serial_kernel_scopes > 0; }

ParallelKernelsScope::ParallelKernelsScope() : suspended_scopes_(t_serial_kernel_scopes) { t_serial_kernel_scopes = 0; }
ParallelKernelsScope::~ParallelKernelsScope() { t_serial_kernel_scopes = suspended_scopes_; }

struct ThreadPool::Job {
  const std::function<void(std::int64_t, std::int64_t)>* fn;
  std::int64_t n;
  int chunks;
  std::atomic<int> next_chunk{1};      // chunk 0 belongs to the caller
  std::atomic<int> workers_inside{0};  // changed under mutex_; the job outlives every worker that joined it
  std::exception_ptr error;            // guarded by mutex_

  void chunk_range(int chunk, std::int64_t& begin, std::int64_t& end) const {
    begin = n * chunk / chunks;
    end = n * (chunk + 1) / chunks;
  }
};

ThreadPool::ThreadPool(int threads) {
  if (threads < 1) throw ValueError("ThreadPool: threads must be >= 1, got " + std::to_string(threads));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    published_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::worker_loop(int /*index*/) {
  std::uint64_t seen = 0;
  const WorkingFor working(this);
  for (;;) {
    spin_until([&] { return published_.load(std::memory_order_acquire) != seen; });
    Job* job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || (job_ != nullptr && generation_ != seen); });
      if (stopping_) return;
      seen = generation_;
      job = job_;
      ++job->workers_inside;
    }
    std::exception_ptr error;
    for (int c = job->next_chunk.fetch_add(1); c < job->chunks; c = job->next_chunk.fetch_add(1)) {
      std::int64_t begin, end;
      job->chunk_range(c, begin, end);
      try {
        (*job->fn)(begin, end);
      } catch (...) {
        if (!error) error = std::current_exception();
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (error && !job->error) job->error = error;
    if (--job->workers_inside == 0) done_.notify_all();
  }
}

void ThreadPool::parallel_for(std::int64_t n, std::int64_t grain,
                              const std::function<void(std::int64_t, std::int64_t)>& fn) {
  if (n <= 0) return;
  int chunks =
      static_cast<int>(std::min<std::int64_t>(size(), std::max<std::int64_t>(1, n / std::max<std::int64_t>(grain, 1))));
  if (chunks <= 1 || must_run_inline(this)) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> submit(submit_mutex_);
  Job job;
  job.fn = &fn;
  job.n = n;
  job.chunks = chunks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &job;
    ++generation_;
    published_.store(generation_, std::memory_order_release);
  }
  wake_.notify_all();

  // The caller runs chunk 0, then claims whatever no worker has taken yet, so every chunk is
  // claimed by the time the loop ends; it then waits for the workers still running theirs.
  std::exception_ptr error;
  {
    const WorkingFor working(this);
    for (int c = 0; c < chunks; c = job.next_chunk.fetch_add(1)) {
      std::int64_t begin, end;
      job.chunk_range(c, begin, end);
      try {
        fn(begin, end);
      } catch (...) {
        if (!error) error = std::current_exception();
      }
    }
  }
  // Every chunk is claimed: the workers still inside finish soon.
  spin_until([&] { return job.workers_inside.load(std::memory_order_acquire) == 0; });
  {
    std::unique_lock<std::mutex> lock(mutex_);
    job_ = nullptr;  // workers that wake from now on find nothing to join
    done_.wait(lock, [&] { return job.workers_inside == 0; });
    if (!error) error = job.error;
  }
  if (error) std::rethrow_exception(error);
}

namespace {
std::mutex g_pool_mutex;
std::shared_ptr<ThreadPool>& global_pool_slot() {
  static std::shared_ptr<ThreadPool> pool =
      std::make_shared<ThreadPool>(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  return pool;
}
std::shared_ptr<ThreadPool> global_pool() {
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  return global_pool_slot();
}
}  // namespace

void set_num_threads(int threads) {
  if (threads < 1) throw ValueError("set_num_threads: threads must be >= 1, got " + std::to_string(threads));
  auto pool = std::make_shared<ThreadPool>(threads);
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  global_pool_slot() = std::move(pool);
}

int num_threads() { return global_pool()->size(); }

void parallel_for(std::int64_t n, std::int64_t grain, const std::function<void(std::int64_t, std::int64_t)>& fn) {
  // What runs inline anyway does so without taking the global pool's lock: serial kernels, and
  // work of one chunk. Kernels that split their work into small pieces (the bfloat16 cross-entropy
  // runs the float32 kernel on each block of rows) call this thousands of times a step, and would
  // take the lock as often.
  if (t_serial_kernel_scopes > 0 || n <= std::max<std::int64_t>(grain, 1)) {
    if (n > 0) fn(0, n);
    return;
  }
  global_pool()->parallel_for(n, grain, fn);
}

}  // namespace kestrel
