// ReplicaPool: every replica once, the lowest replica's exception, the serial-kernels rule,
// nesting, concurrent callers, and kernels inside replicas computing what they compute outside.
#include "strategies/replica_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
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
#include "tests/support/error_message.h"

namespace kestrel::distribute {
namespace {

using testing::contains;
using testing::error_message;

// Restores the process-wide intra-op pool size when a test that changes it ends.
class ThreadCountGuard {
 public:
  ThreadCountGuard() : saved_(num_threads()) {}
  ~ThreadCountGuard() { set_num_threads(saved_); }

 private:
  int saved_;
};

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.spec() == b.spec() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

TEST(ReplicaPool, RejectsFewerThanOneThread) {
  std::string message = error_message<ValueError>([] { ReplicaPool pool(0); });
  EXPECT_TRUE(contains(message, "threads must be >= 1")) << message;
  EXPECT_THROW(ReplicaPool(-2), ValueError);
}

TEST(ReplicaPool, DefaultsToTheIntraOpPoolSize) {
  ThreadCountGuard guard;
  set_num_threads(3);
  EXPECT_EQ(ReplicaPool().size(), 3);
  EXPECT_EQ(ReplicaPool(5).size(), 5);
}

TEST(ReplicaPool, RejectsFewerThanOneReplicaAndAnEmptyFunction) {
  ReplicaPool pool(2);
  std::string message = error_message<ValueError>([&] { pool.run(0, [](int) {}); });
  EXPECT_TRUE(contains(message, "replicas must be >= 1, got 0")) << message;
  EXPECT_THROW(pool.run(-1, [](int) {}), ValueError);
  message = error_message<ValueError>([&] { pool.run(2, std::function<void(int)>()); });
  EXPECT_TRUE(contains(message, "fn is empty")) << message;
}

TEST(ReplicaPool, EveryReplicaRunsExactlyOnceAcrossManyCalls) {
  for (int threads : {1, 2, 3, 8}) {
    ReplicaPool pool(threads);
    for (int call = 0; call < 300; ++call) {
      const int replicas = 1 + call % 11;
      std::vector<std::atomic<int>> runs(static_cast<std::size_t>(replicas));
      pool.run(replicas, [&](int replica) { runs[static_cast<std::size_t>(replica)].fetch_add(1); });
      for (int r = 0; r < replicas; ++r) {
        ASSERT_EQ(runs[static_cast<std::size_t>(r)].load(), 1)
            << "replica " << r << " of " << replicas << ", call " << call << ", " << threads << " threads";
      }
    }
  }
}

TEST(ReplicaPool, ReplicasRunOnSeveralThreads) {
  ReplicaPool pool(4);
  std::mutex mu;
  std::set<std::thread::id> ids;
  // Each replica waits until all have started, so one thread cannot run them all.
  std::atomic<int> started{0};
  pool.run(4, [&](int) {
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

TEST(ReplicaPool, OneThreadRunsEveryReplicaOnTheCallerInOrder) {
  ReplicaPool pool(1);
  std::vector<int> order;
  const std::thread::id caller = std::this_thread::get_id();
  pool.run(5, [&](int replica) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    order.push_back(replica);
  });
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(ReplicaPool, RethrowsTheLowestFailingReplicaAfterAllFinished) {
  ReplicaPool pool(4);
  for (int round = 0; round < 100; ++round) {
    std::atomic<int> finished{0};
    try {
      pool.run(8, [&](int replica) {
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
  pool.run(8, [&](int replica) { total.fetch_add(replica); });
  EXPECT_EQ(total.load(), 28) << "the pool still works after failures";
}

TEST(ReplicaPool, EveryReplicaFailingRethrowsReplicaZeros) {
  ReplicaPool pool(3);
  for (int round = 0; round < 100; ++round) {
    try {
      pool.run(7, [&](int replica) { throw std::runtime_error("replica " + std::to_string(replica)); });
      FAIL() << "expected an exception";
    } catch (const std::runtime_error& e) {
      ASSERT_STREQ(e.what(), "replica 0");
    }
  }
}

TEST(ReplicaPool, KernelsRunSeriallyExactlyWhenReplicasFillThePool) {
  ReplicaPool pool(4);
  for (int replicas : {1, 2, 3, 4, 5, 8}) {
    std::atomic<int> serial{0};
    pool.run(replicas, [&](int) { serial.fetch_add(kernels_run_serially() ? 1 : 0); });
    EXPECT_EQ(serial.load(), replicas >= pool.size() ? replicas : 0) << replicas << " replicas";
  }
  EXPECT_FALSE(kernels_run_serially()) << "the caller's scope must end with its share";
}

TEST(ReplicaPool, ASerialReplicaRunsParallelForInline) {
  ThreadCountGuard guard;
  set_num_threads(4);
  ReplicaPool pool(2);
  std::atomic<int> wrong{0};
  pool.run(6, [&](int) {
    int calls = 0;
    parallel_for(1000, 1, [&](std::int64_t begin, std::int64_t end) {
      if (begin != 0 || end != 1000) wrong.fetch_add(1);
      ++calls;
    });
    if (calls != 1) wrong.fetch_add(1);
  });
  EXPECT_EQ(wrong.load(), 0);
}

TEST(ReplicaPool, KernelsInsideReplicasComputeTheSameBitsAsOutside) {
  ThreadCountGuard guard;
  set_num_threads(4);
  Tensor a = random::normal({96, 80}, random::Key(7));
  Tensor b = random::normal({80, 64}, random::Key(8));
  auto step = [&] { return ops::sum(ops::tanh(ops::matmul(a, b)), {.axes = {0}}); };
  const Tensor expected = step();

  for (int threads : {1, 2, 4}) {
    ReplicaPool pool(threads);
    for (int replicas : {1, 2, 4, 8}) {  // fewer than, as many as, and more replicas than threads
      std::vector<Tensor> results(static_cast<std::size_t>(replicas));
      pool.run(replicas, [&](int replica) { results[static_cast<std::size_t>(replica)] = step(); });
      for (int r = 0; r < replicas; ++r) {
        EXPECT_TRUE(same_bits(results[static_cast<std::size_t>(r)], expected))
            << "replica " << r << " of " << replicas << " on " << threads << " threads";
      }
    }
  }
}

TEST(ReplicaPool, ARunInsideAReplicaRunsInlineWithoutDeadlock) {
  ReplicaPool outer_pool(3);
  ReplicaPool other_pool(2);
  std::vector<std::atomic<int>> runs(4 * 5);
  outer_pool.run(4, [&](int outer) {
    std::thread::id self = std::this_thread::get_id();
    ReplicaPool& pool = outer % 2 == 0 ? outer_pool : other_pool;
    pool.run(5, [&](int inner) {
      EXPECT_EQ(std::this_thread::get_id(), self) << "a nested run stays on its thread";
      runs[static_cast<std::size_t>(outer * 5 + inner)].fetch_add(1);
    });
  });
  for (const auto& r : runs) ASSERT_EQ(r.load(), 1);

  std::string message = error_message<std::runtime_error>([&] {
    outer_pool.run(2, [&](int) {
      outer_pool.run(3, [](int inner) {
        if (inner >= 1) throw std::runtime_error("inner " + std::to_string(inner));
      });
    });
  });
  EXPECT_EQ(message, "inner 1");
}

TEST(ReplicaPool, ConcurrentCallersTakeTurns) {
  ReplicaPool pool(3);
  std::atomic<int> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 3; ++c) {
    callers.emplace_back([&] {
      for (int call = 0; call < 200; ++call) pool.run(4, [&](int) { total.fetch_add(1); });
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), 3 * 200 * 4);
}

TEST(ReplicaPool, ManyRapidRunsTouchNoFinishedRun) {
  // Each run's counter dies with its iteration; a thread still working on an earlier run would
  // count into freed memory or the wrong counter.
  ReplicaPool pool(4);
  for (int call = 0; call < 3'000; ++call) {
    auto counter = std::make_unique<std::atomic<int>>(0);
    const int replicas = 2 + call % 7;
    pool.run(replicas, [&](int) { counter->fetch_add(1); });
    ASSERT_EQ(counter->load(), replicas) << "call " << call;
  }
}

TEST(ReplicaPool, CreatingAndDestroyingPoolsRepeatedly) {
  for (int round = 0; round < 100; ++round) {
    ReplicaPool pool(1 + round % 4);
    std::atomic<int> total{0};
    if (round % 3 != 0) pool.run(8, [&](int replica) { total.fetch_add(replica); });
    ASSERT_EQ(total.load(), round % 3 != 0 ? 28 : 0);
  }
}

}  // namespace
}  // namespace kestrel::distribute
