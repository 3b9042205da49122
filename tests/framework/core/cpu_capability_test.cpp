#include "framework/core/cpu_capability.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "framework/core/error.h"
#include "tests/support/error_message.h"

namespace kestrel::testing {
namespace {

using detail::choose_cpu_capability;

TEST(CpuCapability, NamesRoundTrip) {
  for (CpuCapability level : {CpuCapability::baseline, CpuCapability::avx2, CpuCapability::avx512}) {
    EXPECT_EQ(parse_cpu_capability(to_string(level)), level);
  }
  EXPECT_EQ(parse_cpu_capability("avx3"), std::nullopt);
  EXPECT_EQ(parse_cpu_capability("AVX2"), std::nullopt);
}

TEST(CpuCapability, DetectsWhatCpuidReports) {
  __builtin_cpu_init();
  CpuCapability want = CpuCapability::baseline;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) want = CpuCapability::avx2;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq")) {
    want = CpuCapability::avx512;
  }
  EXPECT_EQ(detected_cpu_capability(), want);
}

TEST(CpuCapability, UnsetUsesTheCpusHighestLevel) {
  auto choice = choose_cpu_capability(std::nullopt, CpuCapability::avx2, CpuCapability::avx512);
  EXPECT_EQ(choice.level, CpuCapability::avx2);
  EXPECT_EQ(choice.reason, "avx2 (the CPU's highest level)");
  EXPECT_EQ(choose_cpu_capability("", CpuCapability::avx512, CpuCapability::avx512).level, CpuCapability::avx512);
}

TEST(CpuCapability, PinsALowerLevel) {
  auto choice = choose_cpu_capability("baseline", CpuCapability::avx512, CpuCapability::avx512);
  EXPECT_EQ(choice.level, CpuCapability::baseline);
  EXPECT_EQ(choice.reason, "baseline (KESTREL_CPU_CAPABILITY=baseline; the CPU has avx512)");
}

TEST(CpuCapability, CapsAHigherLevelAtTheCpus) {
  auto choice = choose_cpu_capability("avx512", CpuCapability::avx2, CpuCapability::avx512);
  EXPECT_EQ(choice.level, CpuCapability::avx2);
  EXPECT_EQ(choice.reason, "avx2 (KESTREL_CPU_CAPABILITY=avx512, but the CPU's highest level is avx2)");
}

// A build configured with -DKESTREL_HIGHEST_CPU_LEVEL below the CPU's level has no kernels above
// it: unset, the build's highest is chosen, and a pinned level above it is capped there.
TEST(CpuCapability, CapsAtTheBuildsHighestLevel) {
  auto unset = choose_cpu_capability(std::nullopt, CpuCapability::avx512, CpuCapability::avx2);
  EXPECT_EQ(unset.level, CpuCapability::avx2);
  EXPECT_EQ(unset.reason, "avx2 (this build's highest level; the CPU has avx512)");
  auto pinned = choose_cpu_capability("avx512", CpuCapability::avx512, CpuCapability::baseline);
  EXPECT_EQ(pinned.level, CpuCapability::baseline);
  EXPECT_EQ(pinned.reason, "baseline (KESTREL_CPU_CAPABILITY=avx512, but this build's highest level is baseline)");
  auto lower = choose_cpu_capability("baseline", CpuCapability::avx512, CpuCapability::avx2);
  EXPECT_EQ(lower.level, CpuCapability::baseline);
  EXPECT_EQ(lower.reason, "baseline (KESTREL_CPU_CAPABILITY=baseline; the CPU has avx512)");
  // A build above the CPU changes nothing: the CPU's level is the limit.
  EXPECT_EQ(choose_cpu_capability(std::nullopt, CpuCapability::avx2, CpuCapability::avx512).reason,
            "avx2 (the CPU's highest level)");
}

TEST(CpuCapability, RequiringALevelTheCpuOrTheBuildLacksIsAnErrorNamingTheFix) {
  using detail::require_cpu_level;
  EXPECT_NO_THROW(require_cpu_level(CpuCapability::avx2, CpuCapability::avx2, CpuCapability::avx512, "f"));
  std::string cpu = error_message<ValueError>(
      [] { require_cpu_level(CpuCapability::avx512, CpuCapability::avx2, CpuCapability::avx512, "f"); });
  EXPECT_EQ(cpu, "f: this CPU cannot run avx512 kernels; its highest level is avx2");
  std::string build = error_message<ValueError>(
      [] { require_cpu_level(CpuCapability::avx2, CpuCapability::avx512, CpuCapability::baseline, "f"); });
  EXPECT_EQ(build,
            "f: this build has no avx2 kernels; its highest level is baseline (configure with "
            "-DKESTREL_HIGHEST_CPU_LEVEL=avx2 to build them)");
}

TEST(CpuCapability, UnknownNameIsAnErrorNamingTheVariableAndTheLevels) {
  std::string m =
      error_message<ValueError>([] { choose_cpu_capability("avx3", CpuCapability::avx2, CpuCapability::avx512); });
  EXPECT_TRUE(contains(m, "KESTREL_CPU_CAPABILITY=avx3")) << m;
  EXPECT_TRUE(contains(m, "baseline, avx2 or avx512")) << m;
}

TEST(CpuCapability, ProcessLevelFollowsTheVariable) {
  const char* setting = std::getenv("KESTREL_CPU_CAPABILITY");
  auto want = choose_cpu_capability(setting ? std::optional<std::string_view>(setting) : std::nullopt,
                                    detected_cpu_capability(), built_cpu_capability());
  EXPECT_EQ(cpu_capability(), want.level);
  EXPECT_EQ(cpu_capability_reason(), want.reason);
  EXPECT_LE(cpu_capability(), detected_cpu_capability());
  EXPECT_LE(cpu_capability(), built_cpu_capability());
  EXPECT_EQ(highest_runnable_cpu_capability(), std::min(detected_cpu_capability(), built_cpu_capability()));
}

}  // namespace
}  // namespace kestrel::testing
