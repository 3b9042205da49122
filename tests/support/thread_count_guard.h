// ThreadCountGuard: restores the process-wide intra-op pool's size when a test that changes it
// (set_num_threads) ends, so the tests after it run on the pool they expect.
#pragma once

#include "framework/core/thread_pool.h"

namespace kestrel::testing {

class ThreadCountGuard {
 public:
  ThreadCountGuard() : saved_(num_threads()) {}
  /// Sets the pool's size to `threads` until the guard ends.
  explicit ThreadCountGuard(int threads) : saved_(num_threads()) { set_num_threads(threads); }
  ~ThreadCountGuard() { set_num_threads(saved_); }
  ThreadCountGuard(const ThreadCountGuard&) = delete;
  ThreadCountGuard& operator=(const ThreadCountGuard&) = delete;

 private:
  int saved_;
};

}  // namespace kestrel::testing
