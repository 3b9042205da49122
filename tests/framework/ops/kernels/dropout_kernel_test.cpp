// kernels::CpuKernels::dropout against the rule it implements, element by element: element i kept
// (and scaled) when random::uniform_at(key, i) >= rate. At every CPU level the machine has, over
// sizes that split over threads at counters' middles and end in a partial batch of counters.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <vector>

#include "framework/core/random.h"
#include "framework/ops/kernels/cpu_kernels.h"
#include "tests/support/cpu_levels.h"
#include "tests/support/thread_count_guard.h"

namespace kestrel::kernels {
namespace {

TEST(DropoutKernel, KeepsExactlyWhereUniformAtReachesTheRateAtEveryLevel) {
  const testing::ThreadCountGuard threads(2);
  const random::Key key(0x0123456789abcdefull);
  for (const CpuCapability level : testing::runnable_cpu_levels()) {
    for (const double rate : {0.1, 0.5, 0.9}) {
      for (const std::int64_t n :
           {std::int64_t{1}, std::int64_t{63}, std::int64_t{65}, std::int64_t{20001}, std::int64_t{20002}}) {
        SCOPED_TRACE("level " + std::to_string(static_cast<int>(level)) + ", rate " + std::to_string(rate) + ", n " +
                     std::to_string(n));
        std::vector<float> x(static_cast<std::size_t>(n));
        for (std::size_t i = 0; i < x.size(); ++i) x[i] = 1.0f + static_cast<float>(i % 7);
        std::vector<float> y(x.size(), -1.0f);
        const auto scale = static_cast<float>(1.0 / (1.0 - rate));
        cpu_kernels_at(level).dropout(x.data(), y.data(), n, key.as_uint64(),
                                      static_cast<std::uint32_t>(std::ceil(rate * 16777216.0)), scale);
        std::int64_t wrong = 0;
        for (std::int64_t i = 0; i < n; ++i) {
          const bool keep = static_cast<double>(random::uniform_at(key, static_cast<std::uint64_t>(i))) >= rate;
          const float want = keep ? x[static_cast<std::size_t>(i)] * scale : 0.0f;
          wrong += std::bit_cast<std::uint32_t>(y[static_cast<std::size_t>(i)]) != std::bit_cast<std::uint32_t>(want);
        }
        EXPECT_EQ(wrong, 0);
      }
    }
  }
}

}  // namespace
}  // namespace kestrel::kernels
