// rows_per_replica: equal shards of a global batch, or an error naming the caller and the fix.
#include "framework/distribute/replica_shards.h"

#include <gtest/gtest.h>

#include "framework/core/error.h"
#include "tests/support/error_message.h"

namespace kestrel::distribute {
namespace {

using testing::contains;
using testing::error_message;

TEST(RowsPerReplica, EqualShards) {
  EXPECT_EQ(rows_per_replica(64, 8, "fit", ""), 8);
  EXPECT_EQ(rows_per_replica(5, 1, "fit", ""), 5);
  EXPECT_EQ(rows_per_replica(8, 8, "fit", ""), 1);
}

TEST(RowsPerReplica, ABatchThatDoesNotDivideNamesTheCallerAndTheFix) {
  const std::string m = error_message<ValueError>([] { rows_per_replica(10, 8, "fit (TPUStrategy)", "use 16"); });
  EXPECT_EQ(m, "fit (TPUStrategy): a global batch of 10 rows does not divide by the 8 replicas; use 16");
  EXPECT_TRUE(
      contains(error_message<ValueError>([] { rows_per_replica(0, 2, "evaluate", "x"); }), "a global batch of 0 rows"));
  EXPECT_TRUE(contains(error_message<ValueError>([] { rows_per_replica(4, 0, "evaluate", "x"); }),
                       "the number of replicas must be >= 1, got 0"));
}

TEST(ShardRows, EachReplicaGetsItsContiguousRowsAndJoinRowsPutsThemBack) {
  const Tensor global = Tensor::from_vector<std::int64_t>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {6, 2});
  std::vector<Tensor> shards;
  shard_rows(global, 3, shards, "fit");
  ASSERT_EQ(shards.size(), 3u);
  EXPECT_EQ(shards[1].shape(), (Shape{2, 2}));
  EXPECT_EQ(shards[1].to_vector<std::int64_t>(), (std::vector<std::int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(join_rows(shards).to_vector<std::int64_t>(), global.to_vector<std::int64_t>());
  shard_rows(Tensor(), 3, shards, "fit");
  EXPECT_FALSE(shards[2].defined());
  EXPECT_FALSE(join_rows({Tensor(), Tensor()}).defined());
}

TEST(ShardRows, BuffersNobodyElseHoldsAreWrittenAgain) {
  std::vector<Tensor> shards;
  shard_rows(Tensor::zeros({4, 3}), 2, shards, "fit");
  const void* first = shards[0].raw_data();
  const Tensor held = shards[1];  // someone still reads replica 1's shard
  const void* second = shards[1].raw_data();
  shard_rows(Tensor::ones({4, 3}), 2, shards, "fit");
  EXPECT_EQ(shards[0].raw_data(), first);
  EXPECT_NE(shards[1].raw_data(), second);
  EXPECT_EQ(held.to_vector<float>(), std::vector<float>(6, 0.0f));  // untouched
  EXPECT_EQ(shards[1].to_vector<float>(), std::vector<float>(6, 1.0f));

  Tensor joined = join_rows(shards);
  const void* buffer = joined.raw_data();
  joined = join_rows(shards, std::move(joined));
  EXPECT_EQ(joined.raw_data(), buffer);
}

TEST(ShardRows, BadBatchesNameTheCaller) {
  std::vector<Tensor> shards;
  EXPECT_TRUE(contains(error_message<ValueError>([&] {
                         shard_rows(Tensor::zeros({6, 2}), 4, shards, "predict (X)");
                       }),
                       "predict (X): a global batch of 6 rows does not divide by the 4 replicas"));
  EXPECT_TRUE(contains(error_message<ShapeError>([&] { shard_rows(Tensor::scalar(1.0), 2, shards, "fit"); }),
                       "fit: a batch's float32[] is a scalar"));
  EXPECT_TRUE(contains(error_message<ShapeError>([] {
                         join_rows({Tensor::zeros({2, 3}), Tensor::zeros({2, 4})});
                       }),
                       "differ beyond"));
}

}  // namespace
}  // namespace kestrel::distribute
