#include "framework/core/cpu_capability.h"

#include <gtest/gtest.h>

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
  auto choice = choose_cpu_capability(std::nullopt, CpuCapability::avx2);
  EXPECT_EQ(choice.level, CpuCapability::avx2);
  EXPECT_EQ(choice.reason, "avx2 (the CPU's highest level)");
  EXPECT_EQ(choose_cpu_capability("", CpuCapability::avx512).level, CpuCapability::avx512);
}

TEST(CpuCapability, PinsALowerLevel) {
  auto choice = choose_cpu_capability("baseline", CpuCapability::avx512);
  EXPECT_EQ(choice.level, CpuCapability::baseline);
  EXPECT_EQ(choice.reason, "baseline (KESTREL_CPU_CAPABILITY=baseline; the CPU has avx512)");
}

TEST(CpuCapability, CapsAHigherLevelAtTheCpus) {
  auto choice = choose_cpu_capability("avx512", CpuCapability::avx2);
  EXPECT_EQ(choice.level, CpuCapability::avx2);
  EXPECT_EQ(choice.reason, "avx2 (KESTREL_CPU_CAPABILITY=avx512, but the CPU's highest level is avx2)");
}

TEST(CpuCapability, UnknownNameIsAnErrorNamingTheVariableAndTheLevels) {
  std::string m = error_message<ValueError>([] { choose_cpu_capability("avx3", CpuCapability::avx2); });
  EXPECT_TRUE(contains(m, "KESTREL_CPU_CAPABILITY=avx3")) << m;
  EXPECT_TRUE(contains(m, "baseline, avx2 or avx512")) << m;
}

TEST(CpuCapability, ProcessLevelFollowsTheVariable) {
  const char* setting = std::getenv("KESTREL_CPU_CAPABILITY");
  auto want = choose_cpu_capability(setting ? std::optional<std::string_view>(setting) : std::nullopt,
                                    detected_cpu_capability());
  EXPECT_EQ(cpu_capability(), want.level);
  EXPECT_EQ(cpu_capability_reason(), want.reason);
  EXPECT_LE(cpu_capability(), detected_cpu_capability());
}

}  // namespace
}  // namespace kestrel::testing
