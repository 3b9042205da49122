// The workers' collectives (strategies/workers.h), run by every worker of the job: sums in worker
// order and the same bits on each, integer wrapping, gathering, and the check that workers agree.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "framework/core/error.h"
#include "strategies/workers.h"
#include "tests/strategies/multi_worker/this_job.h"
#include "tests/support/error_message.h"

namespace kestrel::distribute {
namespace {

using testing::contains;
using testing::error_message;
using testing::workers;

// Worker w's value at element i: different on each worker, with magnitudes that make the order
// of additions show in float32 (1e8 + 1 - 1e8 is 0 or 1 by order).
float value_of(int w, std::size_t i) {
  const float big = (w % 2 == 0 ? 1e8f : -1e8f);
  return (i % 3 == 0 ? big : 0.0f) + static_cast<float>(w + 1) * 0.1f + static_cast<float>(i);
}

TEST(Workers, TheJobIsTheMpiRanks) {
  EXPECT_TRUE(workers().over_mpi());
  EXPECT_GE(workers().count(), 2);
  EXPECT_EQ(workers().is_chief(), workers().index() == 0);
}

TEST(Workers, SumAddsInWorkerOrderAndEveryWorkerHasTheSameBits) {
  for (const std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{1000}, std::size_t{4099}}) {
    std::vector<float> values(n);
    for (std::size_t i = 0; i < n; ++i) values[i] = value_of(workers().index(), i);
    workers().sum(values);
    for (std::size_t i = 0; i < n; ++i) {
      float expected = value_of(0, i);
      for (int w = 1; w < workers().count(); ++w) expected += value_of(w, i);
      ASSERT_EQ(values[i], expected) << "element " << i << " of " << n;
    }
  }
}

TEST(Workers, IntegerSumsWrapAndDoublesSum) {
  std::vector<std::int64_t> ints = {INT64_MAX, workers().index()};
  workers().sum(ints);
  const auto w = static_cast<std::uint64_t>(workers().count());
  EXPECT_EQ(static_cast<std::uint64_t>(ints[0]), static_cast<std::uint64_t>(INT64_MAX) * w);
  EXPECT_EQ(ints[1], workers().count() * (workers().count() - 1) / 2);
  std::vector<double> doubles = {0.5};
  workers().sum(doubles);
  EXPECT_EQ(doubles[0], 0.5 * workers().count());
}

TEST(Workers, GatherPutsEachWorkersBlockInWorkerOrder) {
  std::vector<std::int32_t> all(static_cast<std::size_t>(workers().count()) * 2, -1);
  all[static_cast<std::size_t>(workers().index()) * 2] = workers().index() * 10;
  all[static_cast<std::size_t>(workers().index()) * 2 + 1] = workers().index() * 10 + 1;
  workers().gather_in_place(std::as_writable_bytes(std::span(all)));
  for (int w = 0; w < workers().count(); ++w) {
    EXPECT_EQ(all[static_cast<std::size_t>(w) * 2], w * 10);
    EXPECT_EQ(all[static_cast<std::size_t>(w) * 2 + 1], w * 10 + 1);
  }
  EXPECT_EQ(workers().max(workers().index()), workers().count() - 1);
}

TEST(Workers, TrafficCountsEachCallAndTheRingsBytes) {
  const Workers::Traffic before = workers().traffic();
  std::vector<float> values(4000, 1.0f);
  workers().sum(values);
  const Workers::Traffic after = workers().traffic();
  EXPECT_EQ(after.calls - before.calls, 1);
  EXPECT_GT(after.seconds, before.seconds);
  // 2 (W - 1) / W of the bytes summed, as a ring all-reduce sends.
  const std::int64_t w = workers().count();
  EXPECT_EQ(after.bytes_sent - before.bytes_sent, 2 * (w - 1) * 4000 * 4 / w);
}

TEST(Workers, CheckSameNamesTheWorkersThatDiffer) {
  workers().check_same("the global batch", "64 rows");  // all alike: passes on every worker
  const std::string mine = workers().index() == 1 ? "a Dense(32) model" : "a Dense(16) model";
  const std::string m = error_message<ValueError>([&] { workers().check_same("the models", mine); });
  EXPECT_TRUE(contains(m, "the models differ between the workers: worker 0 (the chief) has a Dense(16) model")) << m;
  EXPECT_TRUE(contains(m, "; worker 1 has a Dense(32) model")) << m;
  EXPECT_FALSE(contains(m, "worker 2 has")) << m;  // alike with the chief
}

}  // namespace
}  // namespace kestrel::distribute
