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

}  // namespace
}  // namespace kestrel::distribute
