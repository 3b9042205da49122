// Data per worker: experimental_distribute_dataset gives each worker its replicas' rows of every
// global batch, so each sample is seen exactly once per epoch over all the workers; and
// distribute_datasets_from_function tells each worker's function its input pipeline.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "framework/data/dataset.h"
#include "strategies/multi_worker_mirrored_strategy.h"
#include "strategies/workers.h"
#include "tests/strategies/multi_worker/gathered_from_every_worker.h"
#include "tests/strategies/multi_worker/this_job.h"

namespace kestrel::distribute {
namespace {

using testing::workers;
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
  std::vector<std::int64_t> all = testing::gathered_from_every_worker(mine);
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
  std::vector<std::int64_t> all = testing::gathered_from_every_worker(mine);
  std::sort(all.begin(), all.end());
  std::vector<std::int64_t> once(64);
  std::iota(once.begin(), once.end(), 0);
  EXPECT_EQ(all, once);
}

// Worker w's values: 1000 w, 1000 w + 1, ..., 6 (w + 1) of them.
std::int64_t first_value_of(int worker) { return 1000 * static_cast<std::int64_t>(worker); }
std::int64_t values_of(int worker) { return 6 * (static_cast<std::int64_t>(worker) + 1); }

// Pipelines of different lengths: worker w's holds its values in w + 1 steps of 2 replicas x 3 rows.
std::unique_ptr<DistributedDataset::Iterator> uneven_pipelines(const MultiWorkerMirroredStrategy& strategy) {
  return strategy
      .distribute_datasets_from_function([](const InputContext& context) {
        const std::int64_t first = first_value_of(context.input_pipeline_id);
        return data::Dataset::range(first, first + values_of(context.input_pipeline_id)).batch(3);
      })
      .make_iterator();
}

TEST(MultiWorkerData, PipelinesOfDifferentLengthsEndTogether) {
  const MultiWorkerMirroredStrategy strategy({.local_replicas = 2});
  // The others wait for the longest pipeline.
  const std::int64_t rows = values_of(workers().index());
  auto it = uneven_pipelines(strategy);
  int steps = 0, empty_steps = 0;
  std::vector<std::int64_t> mine;
  while (std::optional<PerReplica<data::Element>> step = it->next()) {
    ++steps;
    const Tensor& value = (*step)[0].tensor("value");
    if (value.shape()[0] == 0) {
      ++empty_steps;  // this worker's data has ended: zero rows, shaped as its last batch
      continue;
    }
    for (int r = 0; r < step->size(); ++r) {
      const std::vector<std::int64_t> values = (*step)[r].tensor("value").to_vector<std::int64_t>();
      mine.insert(mine.end(), values.begin(), values.end());
    }
  }
  EXPECT_EQ(steps, workers().count());
  EXPECT_EQ(empty_steps, workers().count() - 1 - workers().index());
  EXPECT_EQ(static_cast<std::int64_t>(mine.size()), rows);
}

TEST(MultiWorkerData, GatherTakesEveryWorkersRowsWhenSomeBringNone) {
  const MultiWorkerMirroredStrategy strategy({.local_replicas = 2});
  auto it = uneven_pipelines(strategy);  // each step gathers every replica's values
  std::vector<std::int64_t> gathered;
  while (std::optional<PerReplica<data::Element>> step = it->next()) {
    PerReplica<Tensor> values;
    for (int r = 0; r < step->size(); ++r) values.values.push_back((*step)[r].tensor("value"));
    const std::vector<std::int64_t> all = strategy.gather(values, 0).to_vector<std::int64_t>();
    gathered.insert(gathered.end(), all.begin(), all.end());
  }
  // Every worker gathered every worker's values, each once.
  std::vector<std::int64_t> expected;
  for (int w = 0; w < workers().count(); ++w) {
    for (std::int64_t i = 0; i < values_of(w); ++i) expected.push_back(first_value_of(w) + i);
  }
  std::sort(gathered.begin(), gathered.end());
  EXPECT_EQ(gathered, expected);
}

}  // namespace
}  // namespace kestrel::distribute
