// ThreadPool and the process-wide parallel_for: coverage, exceptions, nesting, resizing, stress,
// and SerialKernelsScope.
#include "framework/core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "framework/core/error.h"
#include "tests/support/thread_count_guard.h"

namespace kestrel {
namespace {

using kestrel::testing::ThreadCountGuard;
// Runs parallel_for and checks that every index in [0, n) is visited exactly once by chunks
// that are contiguous, in range, and at most `max_chunks` in number.
void expect_each_index_once(std::int64_t n, std::int64_t grain, int max_chunks,
                            const std::function<void(std::int64_t, std::int64_t,
                                                     const std::function<void(std::int64_t, std::int64_t)>&)>& run) {
  std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
  std::atomic<int> chunks{0};
  std::atomic<bool> bad_range{false};
  run(n, grain, [&](std::int64_t begin, std::int64_t end) {
    if (begin < 0 || end > n || begin >= end) bad_range = true;
    chunks.fetch_add(1);
    for (std::int64_t i = begin; i < end && i < n && i >= 0; ++i) hits[static_cast<std::size_t>(i)].fetch_add(1);
  });
  EXPECT_FALSE(bad_range.load()) << "n=" << n << " grain=" << grain;
  EXPECT_LE(chunks.load(), max_chunks) << "n=" << n << " grain=" << grain;
  if (n > 0) {
    EXPECT_GE(chunks.load(), 1);
  } else {
    EXPECT_EQ(chunks.load(), 0) << "n=" << n;
  }
  for (std::int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(hits[static_cast<std::size_t>(i)].load(), 1) << "index " << i << " n=" << n << " grain=" << grain;
  }
}

const std::int64_t kSizes[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 100, 1000, 4097, 100003};
const std::int64_t kGrains[] = {0, 1, 2, 3, 16, 1000, 1 << 14, 1 << 30};

TEST(ThreadPool, RejectsFewerThanOneThread) {
  EXPECT_THROW(ThreadPool(0), ValueError);
  EXPECT_THROW(ThreadPool(-3), ValueError);
}

TEST(ThreadPool, SizeCountsTheCaller) {
  EXPECT_EQ(ThreadPool(1).size(), 1);
  EXPECT_EQ(ThreadPool(3).size(), 3);
}

TEST(ThreadPool, EveryIndexIsVisitedExactlyOnce) {
  for (int threads : {1, 2, 3, 4, 8}) {
    ThreadPool pool(threads);
    for (std::int64_t n : kSizes) {
      for (std::int64_t grain : kGrains) {
        expect_each_index_once(n, grain, threads,
                               [&](auto count, auto chunk, const auto& fn) { pool.parallel_for(count, chunk, fn); });
      }
    }
  }
}

TEST(ThreadPool, NegativeCountRunsNothing) {
  ThreadPool pool(4);
  int calls = 0;
  pool.parallel_for(-5, 1, [&](std::int64_t, std::int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(ThreadPool, ChunksRespectTheGrain) {
  ThreadPool pool(4);
  std::mutex mu;
  std::vector<std::int64_t> sizes;
  pool.parallel_for(100, 30, [&](std::int64_t begin, std::int64_t end) {
    std::lock_guard<std::mutex> lock(mu);
    sizes.push_back(end - begin);
  });
  EXPECT_EQ(sizes.size(), 3u);
  for (std::int64_t s : sizes) EXPECT_GE(s, 30);
}

TEST(ThreadPool, WorkIsSpreadOverSeveralThreads) {
  ThreadPool pool(4);
  std::mutex mu;
  std::set<std::thread::id> ids;
  // Each chunk waits until every chunk has started, so one thread cannot run them all.
  std::atomic<int> started{0};
  pool.parallel_for(4, 1, [&](std::int64_t, std::int64_t) {
    started.fetch_add(1);
    {
      std::lock_guard<std::mutex> lock(mu);
      ids.insert(std::this_thread::get_id());
    }
    for (int spin = 0; spin < 2'000'000 && started.load() < 4; ++spin) std::this_thread::yield();
  });
  EXPECT_EQ(started.load(), 4);
  EXPECT_GE(ids.size(), 2u);
}

TEST(ThreadPool, ASingleThreadPoolRunsInlineOnTheCaller) {
  ThreadPool pool(1);
  std::thread::id caller = std::this_thread::get_id();
  int calls = 0;
  pool.parallel_for(1000, 1, [&](std::int64_t begin, std::int64_t end) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 1000);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
}

TEST(ThreadPool, ExceptionFromTheCallersChunkPropagates) {
  ThreadPool pool(4);
  EXPECT_THROW(pool.parallel_for(4, 1,
                                 [&](std::int64_t begin, std::int64_t) {
                                   if (begin == 0) throw ValueError("chunk 0 failed");
                                 }),
               ValueError);
}

TEST(ThreadPool, ExceptionFromEveryChunkPropagatesOnceAndThePoolStillWorks) {
  ThreadPool pool(4);
  for (int round = 0; round < 200; ++round) {
    std::atomic<int> ran{0};
    try {
      pool.parallel_for(64, 1, [&](std::int64_t, std::int64_t) {
        ran.fetch_add(1);
        throw std::runtime_error("chunk failed");
      });
      FAIL() << "expected the chunk's exception";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "chunk failed");
    }
    // Every chunk still runs: one failing chunk does not cancel the others.
    EXPECT_EQ(ran.load(), 4);
  }
  std::atomic<std::int64_t> sum{0};
  pool.parallel_for(1000, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) sum.fetch_add(i);
  });
  EXPECT_EQ(sum.load(), 999 * 1000 / 2);
}

TEST(ThreadPool, ExceptionFromAWorkerChunkPropagates) {
  ThreadPool pool(2);
  // The second chunk fails; whichever thread runs it, the caller sees the error.
  for (int round = 0; round < 200; ++round) {
    EXPECT_THROW(pool.parallel_for(2, 1,
                                   [&](std::int64_t begin, std::int64_t) {
                                     if (begin == 1) throw IndexError("chunk 1 failed");
                                   }),
                 IndexError);
  }
}

TEST(ThreadPool, NestedParallelForRunsInlineWithoutDeadlock) {
  ThreadPool pool(4);
  std::vector<std::atomic<int>> hits(64 * 64);
  pool.parallel_for(64, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      pool.parallel_for(64, 1, [&](std::int64_t b2, std::int64_t e2) {
        for (std::int64_t j = b2; j < e2; ++j) hits[static_cast<std::size_t>(i * 64 + j)].fetch_add(1);
      });
    }
  });
  for (const auto& h : hits) ASSERT_EQ(h.load(), 1);
}

TEST(ThreadPool, ConcurrentCallersOnOnePoolAreSerializedSafely) {
  ThreadPool pool(3);
  std::atomic<std::int64_t> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 3; ++c) {
    callers.emplace_back([&] {
      for (int call = 0; call < 500; ++call) {
        pool.parallel_for(30, 1, [&](std::int64_t begin, std::int64_t end) { total.fetch_add(end - begin); });
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), 3 * 500 * 30);
}

TEST(ThreadPool, ManyRapidSmallJobsAllFinish) {
  // Ten thousand back-to-back jobs whose chunks finish at once: a worker that wakes late must
  // neither miss a job nor touch one whose caller has already returned.
  for (int threads : {2, 4}) {
    ThreadPool pool(threads);
    std::int64_t expected = 0;
    std::atomic<std::int64_t> total{0};
    for (int call = 0; call < 10'000; ++call) {
      std::int64_t n = 1 + call % 7;
      expected += n;
      pool.parallel_for(n, 1, [&](std::int64_t begin, std::int64_t end) { total.fetch_add(end - begin); });
    }
    EXPECT_EQ(total.load(), expected) << threads << " threads";
  }
}

TEST(ThreadPool, JobStateOnTheCallersStackIsNotTouchedAfterReturn) {
  // Each job lives in a fresh stack frame whose memory the next call reuses; a worker still
  // reading the previous job would count into the wrong counter or run a dead function.
  ThreadPool pool(4);
  for (int call = 0; call < 5'000; ++call) {
    auto counter = std::make_unique<std::atomic<int>>(0);
    pool.parallel_for(4, 1,
                      [&](std::int64_t begin, std::int64_t end) { counter->fetch_add(static_cast<int>(end - begin)); });
    ASSERT_EQ(counter->load(), 4) << "call " << call;
  }
}

TEST(ThreadPool, CreatingAndDestroyingPoolsRepeatedly) {
  for (int round = 0; round < 200; ++round) {
    ThreadPool pool(1 + round % 4);
    std::atomic<int> total{0};
    pool.parallel_for(10, 1,
                      [&](std::int64_t begin, std::int64_t end) { total.fetch_add(static_cast<int>(end - begin)); });
    ASSERT_EQ(total.load(), 10);
  }
}

TEST(GlobalParallelFor, SetNumThreadsChangesNumThreads) {
  ThreadCountGuard guard;
  for (int threads : {1, 2, 4, 3}) {
    set_num_threads(threads);
    EXPECT_EQ(num_threads(), threads);
  }
}

TEST(GlobalParallelFor, SetNumThreadsRejectsZeroAndNegatives) {
  ThreadCountGuard guard;
  set_num_threads(2);
  try {
    set_num_threads(0);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("set_num_threads"), std::string::npos) << e.what();
  }
  EXPECT_THROW(set_num_threads(-1), ValueError);
  EXPECT_EQ(num_threads(), 2) << "a rejected size must leave the pool as it was";
}

TEST(GlobalParallelFor, EveryIndexIsVisitedExactlyOnceAtEachThreadCount) {
  ThreadCountGuard guard;
  for (int threads : {1, 2, 4}) {
    set_num_threads(threads);
    for (std::int64_t n : kSizes) {
      for (std::int64_t grain : kGrains) {
        expect_each_index_once(n, grain, threads,
                               [](auto count, auto chunk, const auto& fn) { parallel_for(count, chunk, fn); });
      }
    }
  }
}

TEST(GlobalParallelFor, ExceptionsPropagateToTheCaller) {
  ThreadCountGuard guard;
  set_num_threads(4);
  EXPECT_THROW(parallel_for(100, 1,
                            [](std::int64_t begin, std::int64_t) {
                              if (begin > 0) throw ShapeError("worker chunk failed");
                            }),
               ShapeError);
  set_num_threads(1);
  EXPECT_THROW(parallel_for(100, 1, [](std::int64_t, std::int64_t) { throw ShapeError("inline failed"); }), ShapeError);
}

TEST(GlobalParallelFor, NestedCallsRunInlineWithoutDeadlock) {
  ThreadCountGuard guard;
  set_num_threads(4);
  std::atomic<std::int64_t> total{0};
  parallel_for(16, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      std::thread::id outer = std::this_thread::get_id();
      parallel_for(1000, 1, [&](std::int64_t b, std::int64_t e) {
        EXPECT_EQ(std::this_thread::get_id(), outer) << "a nested call must run on its own thread";
        total.fetch_add(e - b);
      });
    }
  });
  EXPECT_EQ(total.load(), 16 * 1000);
}

TEST(GlobalParallelFor, NestedCallSeesTheWholeRangeAtOnce) {
  ThreadCountGuard guard;
  set_num_threads(2);
  parallel_for(2, 1, [](std::int64_t, std::int64_t) {
    int calls = 0;
    parallel_for(50, 1, [&](std::int64_t b, std::int64_t e) {
      EXPECT_EQ(b, 0);
      EXPECT_EQ(e, 50);
      ++calls;
    });
    EXPECT_EQ(calls, 1);
  });
}

TEST(GlobalParallelFor, TenThousandSmallJobsFinish) {
  ThreadCountGuard guard;
  for (int threads : {2, 4}) {
    set_num_threads(threads);
    std::atomic<std::int64_t> total{0};
    for (int call = 0; call < 10'000; ++call) {
      parallel_for(threads, 1, [&](std::int64_t begin, std::int64_t end) { total.fetch_add(end - begin); });
    }
    EXPECT_EQ(total.load(), 10'000 * threads);
  }
}

TEST(GlobalParallelFor, ResizingWhileOtherThreadsSubmitWork) {
  ThreadCountGuard guard;
  set_num_threads(2);
  std::atomic<bool> stop{false};
  std::atomic<std::int64_t> total{0};
  std::int64_t expected_per_call = 20;
  std::atomic<std::int64_t> calls{0};
  std::thread submitter([&] {
    while (!stop.load()) {
      parallel_for(expected_per_call, 1, [&](std::int64_t begin, std::int64_t end) { total.fetch_add(end - begin); });
      calls.fetch_add(1);
    }
  });
  for (int i = 0; i < 50; ++i) set_num_threads(1 + i % 4);
  stop = true;
  submitter.join();
  EXPECT_EQ(total.load(), calls.load() * expected_per_call);
}

// The number of chunks parallel_for splits [0, n) into on this thread.
int count_chunks(std::int64_t n) {
  std::atomic<int> chunks{0};
  parallel_for(n, 1, [&](std::int64_t, std::int64_t) { chunks.fetch_add(1); });
  return chunks.load();
}

TEST(SerialKernelsScope, ParallelForRunsTheWholeRangeInlineOnTheCallingThread) {
  ThreadCountGuard guard;
  set_num_threads(4);
  SerialKernelsScope serial;
  EXPECT_TRUE(kernels_run_serially());
  std::thread::id caller = std::this_thread::get_id();
  int calls = 0;
  parallel_for(1000, 1, [&](std::int64_t begin, std::int64_t end) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 1000);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
  parallel_for(0, 1, [&](std::int64_t, std::int64_t) { ++calls; });
  EXPECT_EQ(calls, 1) << "an empty range runs nothing, serial or not";
}

TEST(SerialKernelsScope, AlsoAppliesToAnExplicitPool) {
  ThreadPool pool(4);
  SerialKernelsScope serial;
  int calls = 0;
  pool.parallel_for(1000, 1, [&](std::int64_t begin, std::int64_t end) {
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 1000);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
}

TEST(SerialKernelsScope, ScopesNestAndSplittingResumesAfterTheOutermostEnds) {
  ThreadCountGuard guard;
  set_num_threads(4);
  EXPECT_FALSE(kernels_run_serially());
  EXPECT_EQ(count_chunks(4), 4);
  {
    SerialKernelsScope outer;
    {
      SerialKernelsScope inner;
      EXPECT_EQ(count_chunks(4), 1);
    }
    EXPECT_TRUE(kernels_run_serially()) << "the outer scope still lives";
    EXPECT_EQ(count_chunks(4), 1);
  }
  EXPECT_FALSE(kernels_run_serially());
  EXPECT_EQ(count_chunks(4), 4);
}

TEST(SerialKernelsScope, OnlyTheThreadThatHoldsItRunsSerially) {
  ThreadCountGuard guard;
  set_num_threads(4);
  SerialKernelsScope serial;
  int other_thread_chunks = 0;
  bool other_thread_serial = true;
  std::thread other([&] {
    other_thread_serial = kernels_run_serially();
    other_thread_chunks = count_chunks(4);
  });
  other.join();
  EXPECT_FALSE(other_thread_serial);
  EXPECT_EQ(other_thread_chunks, 4);
  EXPECT_EQ(count_chunks(4), 1);
}

TEST(SerialKernelsScope, ManySerialThreadsAtOnceEachRunInline) {
  // What replica threads do: each holds a scope and calls kernels concurrently.
  ThreadCountGuard guard;
  set_num_threads(2);
  std::atomic<int> wrong{0};
  std::vector<std::thread> replicas;
  for (int r = 0; r < 4; ++r) {
    replicas.emplace_back([&] {
      SerialKernelsScope serial;
      for (int call = 0; call < 200; ++call) {
        std::thread::id self = std::this_thread::get_id();
        int calls = 0;
        parallel_for(100, 1, [&](std::int64_t begin, std::int64_t end) {
          if (begin != 0 || end != 100 || std::this_thread::get_id() != self) wrong.fetch_add(1);
          ++calls;
        });
        if (calls != 1) wrong.fetch_add(1);
      }
    });
  }
  for (auto& t : replicas) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace kestrel
