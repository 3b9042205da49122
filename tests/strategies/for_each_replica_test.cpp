// Strategy::for_each_replica: replicas run on the intra-op pool's threads. Every replica once,
// the lowest replica's exception, the serial-kernels rule, nesting, concurrent callers, and
// kernels inside replicas computing what they compute outside.

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/core/thread_pool.h"
#include "framework/ops/ops.h"
#include "strategies/mirrored_strategy.h"
#include "tests/support/error_message.h"
#include "tests/support/same_bits.h"
#include "tests/support/thread_count_guard.h"

namespace kestrel::distribute {
namespace {

using kestrel::testing::same_bits;
using kestrel::testing::ThreadCountGuard;
using testing::contains;
using testing::error_message;

// fn on every one of `replicas` replicas, with `threads` intra-op threads.
void for_each(int threads, int replicas, const std::function<void(int)>& fn) {
  if (num_threads() != threads) set_num_threads(threads);
  MirroredStrategy strategy({.num_replicas = replicas});
  strategy.for_each_replica(fn);
}

TEST(ForEachReplica, RejectsAnEmptyFunction) {
  MirroredStrategy strategy({.num_replicas = 2});
  const std::string message = error_message<ValueError>([&] { strategy.for_each_replica(std::function<void(int)>()); });
  EXPECT_TRUE(contains(message, "fn is empty")) << message;
}

TEST(ForEachReplica, EveryReplicaRunsExactlyOnceAcrossManyCalls) {
  ThreadCountGuard guard;
  for (int threads : {1, 2, 3, 8}) {
    for (int call = 0; call < 300; ++call) {
      const int replicas = 1 + call % 11;
      std::vector<std::atomic<int>> runs(static_cast<std::size_t>(replicas));
      for_each(threads, replicas, [&](int replica) { runs[static_cast<std::size_t>(replica)].fetch_add(1); });
      for (int r = 0; r < replicas; ++r) {
        ASSERT_EQ(runs[static_cast<std::size_t>(r)].load(), 1)
            << "replica " << r << " of " << replicas << ", call " << call << ", " << threads << " threads";
      }
    }
  }
}

TEST(ForEachReplica, ReplicasThatFillThePoolRunOnSeveralThreads) {
  ThreadCountGuard guard;
  std::mutex mu;
  std::set<std::thread::id> ids;
  // Each replica waits a while for the others to start, so one thread cannot run them all at once.
  std::atomic<int> started{0};
  for_each(4, 4, [&](int) {
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

TEST(ForEachReplica, FewerReplicasThanThreadsRunOnTheCallerInOrder) {
  ThreadCountGuard guard;
  std::vector<int> order;
  const std::thread::id caller = std::this_thread::get_id();
  for_each(8, 5, [&](int replica) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    order.push_back(replica);
  });
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(ForEachReplica, RethrowsTheLowestFailingReplicaAfterAllFinished) {
  ThreadCountGuard guard;
  set_num_threads(4);
  MirroredStrategy strategy({.num_replicas = 8});
  for (int round = 0; round < 100; ++round) {
    std::atomic<int> finished{0};
    try {
      strategy.for_each_replica([&](int replica) {
        finished.fetch_add(1);
        if (replica == 6) throw std::runtime_error("replica 6 failed");
        if (replica == 3) throw ValueError("replica 3 failed");
        if (replica == 5) throw IndexError("replica 5 failed");
      });
      FAIL() << "expected replica 3's exception";
    } catch (const ValueError& e) {
      EXPECT_STREQ(e.what(), "replica 3 failed");
    }
    EXPECT_EQ(finished.load(), 8) << "a failing replica must not cancel the others";
  }
  std::atomic<int> total{0};
  strategy.for_each_replica([&](int replica) { total.fetch_add(replica); });
  EXPECT_EQ(total.load(), 28) << "the pool still works after failures";
}

TEST(ForEachReplica, EveryReplicaFailingRethrowsReplicaZeros) {
  ThreadCountGuard guard;
  set_num_threads(3);
  MirroredStrategy strategy({.num_replicas = 7});
  for (int round = 0; round < 100; ++round) {
    try {
      strategy.for_each_replica([&](int replica) { throw std::runtime_error("replica " + std::to_string(replica)); });
      FAIL() << "expected an exception";
    } catch (const std::runtime_error& e) {
      ASSERT_STREQ(e.what(), "replica 0");
    }
  }
}

TEST(ForEachReplica, KernelsRunSeriallyExactlyWhenReplicasFillThePool) {
  ThreadCountGuard guard;
  for (int replicas : {1, 2, 3, 4, 5, 8}) {
    std::atomic<int> serial{0};
    for_each(4, replicas, [&](int) { serial.fetch_add(kernels_run_serially() ? 1 : 0); });
    EXPECT_EQ(serial.load(), replicas >= 4 ? replicas : 0) << replicas << " replicas";
  }
  EXPECT_FALSE(kernels_run_serially()) << "the caller's scope must end with its share";
}

TEST(ForEachReplica, ASerialReplicaRunsParallelForInline) {
  ThreadCountGuard guard;
  std::atomic<int> wrong{0};
  for_each(2, 6, [&](int) {
    int calls = 0;
    parallel_for(1000, 1, [&](std::int64_t begin, std::int64_t end) {
      if (begin != 0 || end != 1000) wrong.fetch_add(1);
      ++calls;
    });
    if (calls != 1) wrong.fetch_add(1);
  });
  EXPECT_EQ(wrong.load(), 0);
}

TEST(ForEachReplica, KernelsInsideReplicasComputeTheSameBitsAsOutside) {
  ThreadCountGuard guard;
  set_num_threads(4);
  Tensor a = random::normal({96, 80}, random::Key(7));
  Tensor b = random::normal({80, 64}, random::Key(8));
  auto step = [&] { return ops::sum(ops::tanh(ops::matmul(a, b)), {.axes = {0}}); };
  const Tensor expected = step();

  for (int threads : {1, 2, 4}) {
    for (int replicas : {1, 2, 4, 8}) {  // fewer than, as many as, and more replicas than threads
      std::vector<Tensor> results(static_cast<std::size_t>(replicas));
      for_each(threads, replicas, [&](int replica) { results[static_cast<std::size_t>(replica)] = step(); });
      for (int r = 0; r < replicas; ++r) {
        EXPECT_TRUE(same_bits(results[static_cast<std::size_t>(r)], expected))
            << "replica " << r << " of " << replicas << " on " << threads << " threads";
      }
    }
  }
}

TEST(ForEachReplica, ARunInsideAReplicaRunsInlineWithoutDeadlock) {
  ThreadCountGuard guard;
  set_num_threads(3);
  MirroredStrategy outer_strategy({.num_replicas = 4}), inner_strategy({.num_replicas = 5});
  std::vector<std::atomic<int>> runs(4 * 5);
  outer_strategy.for_each_replica([&](int outer) {
    const std::thread::id self = std::this_thread::get_id();
    inner_strategy.for_each_replica([&](int inner) {
      EXPECT_EQ(std::this_thread::get_id(), self) << "a nested run stays on its thread";
      runs[static_cast<std::size_t>(outer * 5 + inner)].fetch_add(1);
    });
  });
  for (const auto& r : runs) ASSERT_EQ(r.load(), 1);

  const std::string message = error_message<std::runtime_error>([&] {
    outer_strategy.for_each_replica([&](int) {
      inner_strategy.for_each_replica([](int inner) {
        if (inner >= 1) throw std::runtime_error("inner " + std::to_string(inner));
      });
    });
  });
  EXPECT_EQ(message, "inner 1");
}

TEST(ForEachReplica, ConcurrentCallersTakeTurns) {
  ThreadCountGuard guard;
  set_num_threads(3);
  MirroredStrategy strategy({.num_replicas = 4});
  std::atomic<int> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 3; ++c) {
    callers.emplace_back([&] {
      for (int call = 0; call < 200; ++call) strategy.for_each_replica([&](int) { total.fetch_add(1); });
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), 3 * 200 * 4);
}

TEST(ForEachReplica, ManyRapidRunsTouchNoFinishedRun) {
  // Each run's counter dies with its iteration; a thread still working on an earlier run would
  // count into freed memory or the wrong counter.
  ThreadCountGuard guard;
  set_num_threads(4);
  for (int call = 0; call < 3'000; ++call) {
    auto counter = std::make_unique<std::atomic<int>>(0);
    const int replicas = 2 + call % 7;
    MirroredStrategy strategy({.num_replicas = replicas});
    strategy.for_each_replica([&](int) { counter->fetch_add(1); });
    ASSERT_EQ(counter->load(), replicas) << "call " << call;
  }
}

}  // namespace
}  // namespace kestrel::distribute
