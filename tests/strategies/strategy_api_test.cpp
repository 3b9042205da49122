// The Strategy API: run, reduce, gather, distributed datasets, the TPU topology log, and option errors.
#include <gtest/gtest.h>

#include "framework/core/error.h"
#include "framework/data/dataset.h"
#include "framework/ops/ops.h"
#include "strategies/mirrored_strategy.h"
#include "strategies/tpu_strategy.h"
#include "tests/support/error_message.h"
#include "tests/support/log_capture.h"

namespace kestrel::distribute {
namespace {

using testing::contains;
using testing::error_message;

TEST(StrategyApi, TPUStrategyLogsItsTopologyAndRunsEightReplicas) {
  testing::LogCapture log("kestrel.distribute");
  TPUStrategy tpu(TPUClusterResolver::local());
  EXPECT_EQ(tpu.num_replicas_in_sync(), 8);
  EXPECT_EQ(tpu.name(), "TPUStrategy");
  EXPECT_EQ(tpu.memory_per_replica(), std::int64_t{16} << 30);
  EXPECT_TRUE(contains(log.text(), "Found TPU system: 8 cores")) << log.text();
  EXPECT_TRUE(contains(log.text(), "16.00 GiB of memory per core")) << log.text();
}

TEST(StrategyApi, RunReduceAndGather) {
  MirroredStrategy strategy({.num_replicas = 4});
  PerReplica<Tensor> values = strategy.run([](int replica) {
    return Tensor::from_vector<float>({static_cast<float>(replica), 1.0f}, {2});
  });
  ASSERT_EQ(values.size(), 4);
  EXPECT_EQ(values[2].to_vector<float>(), (std::vector<float>{2, 1}));
  EXPECT_EQ(strategy.reduce(ReduceOp::SUM, values).to_vector<float>(), (std::vector<float>{6, 4}));
  EXPECT_EQ(strategy.reduce(ReduceOp::MEAN, values).to_vector<float>(), (std::vector<float>{1.5f, 1}));
  // Along axis 0 as well: a global mean over the 8 elements.
  EXPECT_FLOAT_EQ(strategy.reduce(ReduceOp::MEAN, values, 0).item(), 10.0 / 8.0);
  EXPECT_EQ(strategy.gather(values, 0).to_vector<float>(), (std::vector<float>{0, 1, 1, 1, 2, 1, 3, 1}));
  const std::string m =
      error_message<ValueError>([&] { strategy.reduce(ReduceOp::SUM, PerReplica<Tensor>{{values[0]}}); });
  EXPECT_TRUE(contains(m, "got values from 1 replicas, but 4 run in sync")) << m;
}

TEST(StrategyApi, DistributedDatasetsSplitGlobalBatchesOrFeedReplicasInTurn) {
  MirroredStrategy strategy({.num_replicas = 2});
  auto split = strategy.experimental_distribute_dataset(data::Dataset::range(8).batch(4)).make_iterator();
  std::optional<PerReplica<data::Element>> step = split->next();
  ASSERT_TRUE(step);
  const std::string key = step->values[0].keys().front();
  EXPECT_EQ((*step)[0].tensor(key).to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ((*step)[1].tensor(key).to_vector<std::int64_t>(), (std::vector<std::int64_t>{2, 3}));

  auto uneven = strategy.experimental_distribute_dataset(data::Dataset::range(9).batch(3)).make_iterator();
  const std::string m = error_message<ValueError>([&] { uneven->next(); });
  EXPECT_TRUE(contains(m, "a global batch of 3 rows does not divide by the 2 replicas")) << m;

  int contexts = 0;
  auto fed = strategy
                 .distribute_datasets_from_function([&](const InputContext& context) {
                   ++contexts;
                   EXPECT_EQ(context.num_replicas_in_sync, 2);
                   return data::Dataset::range(8).batch(context.get_per_replica_batch_size(4));
                 })
                 .make_iterator();
  EXPECT_EQ(contexts, 1);
  step = fed->next();
  ASSERT_TRUE(step);
  EXPECT_EQ((*step)[1].tensor(key).to_vector<std::int64_t>(), (std::vector<std::int64_t>{2, 3}));
}

TEST(StrategyApi, BadOptionsAreRefused) {
  EXPECT_TRUE(contains(error_message<ValueError>([] { MirroredStrategy bad({.num_replicas = 0}); }),
                       "number of replicas must be >= 1"));
  EXPECT_TRUE(contains(error_message<ValueError>([] { TPUClusterResolver::local({.num_cores = 0}); }), "num_cores"));
  EXPECT_TRUE(contains(error_message<ValueError>([] { TPUClusterResolver::local({.memory_per_core = 0}); }),
                       "memory_per_core"));
  EXPECT_TRUE(contains(
      error_message<ValueError>([] { InputContext{.num_replicas_in_sync = 8}.get_per_replica_batch_size(12); }),
      "does not divide by the 8 replicas"));
}

}  // namespace
}  // namespace kestrel::distribute
