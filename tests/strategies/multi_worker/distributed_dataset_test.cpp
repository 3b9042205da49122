// Data per worker: experimental_distribute_dataset gives each worker its replicas' rows of every
// global batch, so each sample is seen exactly once per epoch over all the workers; and
// distribute_datasets_from_function tells each worker's function its input pipeline.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "framework/data/dataset.h"
#include "strategies/multi_worker_mirrored_strategy.h"
#include "strategies/workers.h"

namespace kestrel::distribute {
namespace {

const Workers& workers() { return *Workers::of_this_job(); }

// Every worker's values gathered, each worker bringing as many (padded with -1 to the longest).
std::vector<std::int64_t> gather_all(const std::vector<std::int64_t>& mine) {
  const auto longest = static_cast<std::size_t>(workers().max(static_cast<std::int64_t>(mine.size())));
  std::vector<std::int64_t> all(longest * static_cast<std::size_t>(workers().count()), -1);
  std::copy(mine.begin(), mine.end(), all.begin() + static_cast<std::ptrdiff_t>(longest * workers().index()));
  workers().gather_in_place(std::as_writable_bytes(std::span(all)));
  std::erase(all, -1);
  return all;
}

TEST(MultiWorkerData, EachSampleIsSeenOncePerEpochOverTheWorkers) {
  const MultiWorkerMirroredStrategy strategy({.local_replicas = 2});
  const int in_sync = strategy.num_replicas_in_sync();
  // 10 global batches, each 2 rows per replica in sync.
  const std::int64_t global = 2 * in_sync, samples = 10 * global;
  auto it = strategy.experimental_distribute_dataset(data::Dataset::range(samples).batch(global)).make_iterator();
  std::vector<std::int64_t> mine;
  int steps = 0;
  while (std::optional<PerReplica<data::Element>> step = it->next()) {
    ASSERT_EQ(step->size(), strategy.num_local_replicas());
    for (int r = 0; r < step->size(); ++r) {
      const std::vector<std::int64_t> rows = (*step)[r].tensor("value").to_vector<std::int64_t>();
      // Replica r of this worker holds its rows of the global batch, after the workers before it.
      EXPECT_EQ(rows.front(), steps * global + 2 * (strategy.first_local_replica() + r));
      mine.insert(mine.end(), rows.begin(), rows.end());
    }
    ++steps;
  }
  EXPECT_EQ(steps, 10);
  std::vector<std::int64_t> all = gather_all(mine);
  std::sort(all.begin(), all.end());
  std::vector<std::int64_t> once(static_cast<std::size_t>(samples));
  std::iota(once.begin(), once.end(), 0);
  EXPECT_EQ(all, once);
}

TEST(MultiWorkerData, EachWorkersFunctionIsToldItsInputPipeline) {
  const MultiWorkerMirroredStrategy strategy({.local_replicas = 2});
  InputContext seen;
  auto it = strategy
                .distribute_datasets_from_function([&](const InputContext& context) {
                  seen = context;
                  // Each pipeline its own shard of the samples, batched per replica.
                  return data::Dataset::range(64)
                      .shard(context.num_input_pipelines, context.input_pipeline_id)
                      .batch(context.get_per_replica_batch_size(4 * context.num_replicas_in_sync));
                })
                .make_iterator();
  EXPECT_EQ(seen.num_input_pipelines, workers().count());
  EXPECT_EQ(seen.input_pipeline_id, workers().index());
  EXPECT_EQ(seen.num_replicas_in_sync, strategy.num_replicas_in_sync());
  std::vector<std::int64_t> mine;
  while (std::optional<PerReplica<data::Element>> step = it->next()) {
    for (int r = 0; r < step->size(); ++r) {
      const std::vector<std::int64_t> rows = (*step)[r].tensor("value").to_vector<std::int64_t>();
      mine.insert(mine.end(), rows.begin(), rows.end());
    }
  }
  std::vector<std::int64_t> all = gather_all(mine);
  std::sort(all.begin(), all.end());
  std::vector<std::int64_t> once(64);
  std::iota(once.begin(), once.end(), 0);
  EXPECT_EQ(all, once);
}

}  // namespace
}  // namespace kestrel::distribute
