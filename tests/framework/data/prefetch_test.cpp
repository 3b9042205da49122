#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "framework/core/error.h"
#include "framework/data/dataset.h"
#include "tests/framework/data/dataset_test_util.h"
#include "tests/support/error_message.h"

namespace kestrel::data {
namespace {

using testing_util::firsts;

TEST(Prefetch, KeepsTheOrder) {
  std::vector<std::int64_t> expected;
  for (int i = 0; i < 200; ++i) expected.push_back(i);
  EXPECT_EQ(firsts(Dataset::range(200).prefetch(3)), expected);
  EXPECT_EQ(Dataset::range(200).prefetch(3).cardinality(), 200);
}

TEST(Prefetch, RunsAheadOnAnotherThreadWithinItsBuffer) {
  std::atomic<int> produced{0};
  Dataset ds = Dataset::range(100).map([&produced](Element e) {
    ++produced;
    return e;
  });
  auto it = ds.prefetch(4).make_iterator();
  ASSERT_TRUE(it->next());
  // The producer fills the buffer without the consumer asking, and stops there.
  for (int i = 0; i < 200 && produced.load() < 5; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_GE(produced.load(), 5);
  EXPECT_LE(produced.load(), 1 + 4 + 1);  // the one consumed, a full buffer, one in flight
}

TEST(Prefetch, StopsCleanlyWhenDestroyedMidPass) {
  std::atomic<int> produced{0};
  Dataset ds = Dataset::range(1000000).map([&produced](Element e) {
    ++produced;
    return e;
  });
  {
    auto it = ds.repeat().prefetch(2).make_iterator();
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(it->next());
  }  // the destructor must join the producer, which is blocked on a full buffer
  const int after = produced.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(produced.load(), after);  // nothing runs after destruction
  EXPECT_LT(after, 100);
}

TEST(Prefetch, RethrowsErrorsOnTheConsumerThreadInOrder) {
  Dataset failing = Dataset::range(5).map([](Element e) {
    if (e.tensor("value").to_vector<std::int64_t>()[0] == 3) throw ValueError("element 3 is bad");
    return e;
  });
  auto it = failing.prefetch(2).make_iterator();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(it->next());
  EXPECT_TRUE(testing::contains(testing::error_message<ValueError>([&] { it->next(); }), "element 3 is bad"));
  EXPECT_EQ(firsts(failing.prefetch(2).ignore_errors()), (std::vector<std::int64_t>{0, 1, 2, 4}));
}

}  // namespace
}  // namespace kestrel::data
