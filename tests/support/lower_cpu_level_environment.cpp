// Linked into the test executables that run again at each CPU level below the machine's own
// (kestrel_add_test's PER_CPU_LEVEL). ctest sets KESTREL_TEST_CPU_LEVEL to a level the build has;
// before any test runs, this pins the kernels to it through KESTREL_CPU_CAPABILITY, or skips every
// test when the level is not below the highest this CPU and build run: the unpinned run covers
// that one, and a higher one cannot run here.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "framework/core/cpu_capability.h"

namespace kestrel::testing {
namespace {

class LowerCpuLevelEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* wanted = std::getenv("KESTREL_TEST_CPU_LEVEL");
    if (wanted == nullptr) return;
    const auto level = parse_cpu_capability(wanted);
    ASSERT_TRUE(level.has_value()) << "KESTREL_TEST_CPU_LEVEL=" << wanted << " names no CPU level";
    const CpuCapability highest = highest_runnable_cpu_capability();
    if (*level >= highest) {
      GTEST_SKIP() << "KESTREL_TEST_CPU_LEVEL=" << wanted << " is not below the highest level this CPU and build run ("
                   << to_string(highest) << "): the unpinned run covers that one";
    }
    setenv("KESTREL_CPU_CAPABILITY", wanted, /*overwrite=*/1);
    // The level is read once per process: a kernel run before this point would have fixed it.
    ASSERT_EQ(cpu_capability(), *level) << "the CPU level was read before the tests started";
  }
};

const auto* const kRegistered = ::testing::AddGlobalTestEnvironment(new LowerCpuLevelEnvironment);

}  // namespace
}  // namespace kestrel::testing
