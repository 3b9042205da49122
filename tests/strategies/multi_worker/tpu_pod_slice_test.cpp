// A simulated TPU pod slice over the job's MPI ranks: one worker per host, its 8 cores the
// worker's local replicas, the topology logged, and a job whose ranks are not the slice's hosts
// refused with the command that fits.
#include <gtest/gtest.h>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/layers/layers.h"
#include "framework/model/sequential.h"
#include "strategies/tpu_strategy.h"
#include "strategies/workers.h"
#include "tests/strategies/multi_worker/this_job.h"
#include "tests/support/error_message.h"
#include "tests/support/log_capture.h"

namespace kestrel::distribute {
namespace {

using testing::contains;
using testing::error_message;
using testing::workers;

TEST(TPUPodSlice, EachHostIsAWorkerWithItsEightCores) {
  const std::string type = "v3-" + std::to_string(8 * workers().count());  // v3-16 on 2 ranks, v3-32 on 4
  testing::LogCapture log("kestrel.distribute");
  const TPUStrategy strategy(TPUClusterResolver::slice(type));
  EXPECT_EQ(strategy.num_replicas_in_sync(), 8 * workers().count());
  EXPECT_EQ(strategy.num_local_replicas(), 8);
  EXPECT_EQ(strategy.first_local_replica(), 8 * workers().index());
  EXPECT_EQ(strategy.memory_per_replica(), std::int64_t{16} << 30);
  if (workers().is_chief()) {
    EXPECT_TRUE(contains(log.text(), "Found TPU system: " + std::to_string(8 * workers().count()) + " cores (" + type +
                                         ", simulated) on " + std::to_string(workers().count()) + " workers"))
        << log.text();
  }
}

TEST(TPUPodSlice, AJobWithOtherRanksThanTheSliceHasHostsIsRefused) {
  const std::string m = error_message<ValueError>([] { TPUClusterResolver::slice("v3-64"); });
  EXPECT_TRUE(contains(m, "the slice v3-64 has 8 hosts, each one worker, so it runs as 8 MPI ranks (mpirun -np 8 "))
      << m;
  EXPECT_TRUE(contains(m, "but this job has " + std::to_string(workers().count()))) << m;
}

TEST(TPUPodSlice, AModelTrainsOnTheSlice) {
  clear_session();
  random::set_global_seed(3);
  const TPUStrategy strategy(TPUClusterResolver::slice("v3-" + std::to_string(8 * workers().count())));
  auto scope = strategy.scope();
  Sequential model({layers::Dense(4, {.activation = "relu"}), layers::Dense(1)});
  model.compile({.optimizer = "sgd", .loss = "mse", .jit_compile = true});
  const std::int64_t global = 8 * workers().count() * 2;
  const Tensor x = random::normal({global * 3, 5}, random::Key(1)), y = random::normal({global * 3, 1}, random::Key(2));
  const History history = model.fit(x, y, {.batch_size = global, .epochs = 2, .verbose = 0, .shuffle = false});
  EXPECT_LT(history.history.at("loss").back(), history.history.at("loss").front());
}

}  // namespace
}  // namespace kestrel::distribute
