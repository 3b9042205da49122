// The multi-worker strategies started without mpirun: MultiWorkerMirroredStrategy is one worker
// and says so, and a TPU pod slice is refused with the mpirun command it needs; bad slice names.
#include <gtest/gtest.h>

#include "framework/core/error.h"
#include "strategies/multi_worker_mirrored_strategy.h"
#include "strategies/tpu_strategy.h"
#include "strategies/workers.h"
#include "tests/support/error_message.h"
#include "tests/support/log_capture.h"

namespace kestrel::distribute {
namespace {

using testing::contains;
using testing::error_message;

TEST(MultiWorkerAlone, WithoutMpirunTheStrategyIsOneWorkerAndSaysSo) {
  testing::LogCapture log("kestrel.distribute");
  const MultiWorkerMirroredStrategy strategy({.local_replicas = 2});
  EXPECT_EQ(strategy.num_workers(), 1);
  EXPECT_EQ(strategy.worker_index(), 0);
  EXPECT_EQ(strategy.num_replicas_in_sync(), 2);
  EXPECT_FALSE(strategy.workers().over_mpi());
  EXPECT_TRUE(contains(log.text(), "not started by mpirun, so this process is a single worker with 2 local replicas"))
      << log.text();
}

TEST(MultiWorkerAlone, APodSliceNeedsOneRankPerHost) {
  const std::string m = error_message<ValueError>([] { TPUClusterResolver::slice("v3-32"); });
  EXPECT_TRUE(contains(m,
                       "TPUClusterResolver: the slice v3-32 has 4 hosts, each one worker, so it runs as 4 MPI ranks "
                       "(mpirun -np 4 <program>), but this job has 1 (not started by mpirun)"))
      << m;
  // One host's slice runs alone.
  const TPUClusterResolver v3_8 = TPUClusterResolver::slice("v3-8");
  EXPECT_EQ(v3_8.num_cores(), 8);
  EXPECT_EQ(v3_8.master(), "v3-8");
  const TPUClusterResolver v4_8 = TPUClusterResolver::slice("v4-8");
  EXPECT_EQ(v4_8.num_cores(), 4);  // four chips, each one device of two cores
  EXPECT_EQ(v4_8.memory_per_core(), std::int64_t{32} << 30);
}

TEST(MultiWorkerAlone, UnknownSlicesAreRefusedWithTheForm) {
  for (const char* bad : {"v5-8", "v3", "v3-", "v3-12x", "tpu", "v3-0"}) {
    const std::string m = error_message<ValueError>([&] { TPUClusterResolver::slice(bad); });
    EXPECT_TRUE(contains(m, "is not an accelerator type Kestrel simulates; use v2-<cores>, v3-<cores> or v4-<cores>"))
        << bad << ": " << m;
  }
  const std::string m = error_message<ValueError>([] { TPUClusterResolver::slice("v3-12"); });
  EXPECT_TRUE(contains(m, "a v3 slice has a multiple of 8 cores (8 per host), so 'v3-12' is not one")) << m;
}

}  // namespace
}  // namespace kestrel::distribute
