// The GCC 12.2 miscompile that failed Pad.PadsEncodingsFromElsewhere and
// CausalLmBatch.ShiftsLabelsAndIgnoresPadding on AVX-512 machines, kept as a regression test.
//
// What GCC does wrong: std::vector<std::int64_t>{1, 1, 1, 0} copies its initializer list with a
// 32-byte memcpy, which GCC turns into one 256-bit integer move of the constant (a 64-byte one
// for {1, 1, 1, 1, 1, 1, 0, 0}). GCC stores such a constant without its top words when they are
// only the sign extension of the word below (here: 1, 1, 1 and an implied 0), and the x86
// backend's broadcast shortcut (ix86_convert_const_wide_int_to_broadcast) checks only the stored
// words: they are all 1, so it emits vpbroadcastq 1 and the vector reads back {1, 1, 1, 1}. The
// SLP vectorizer only sets this up: it turns the literal's four stores into one (right) vector
// constant, which the copy then reads; its "64 byte vectors" note gives the widest vector size it
// tried for the block, not the 32-byte vector it used. Current GCC compares the number of stored
// words with the mode's before broadcasting; GCC 12.2 (Debian 12's) does not.
//
// Which flags hit it: GCC uses 256/512-bit integer moves for memcpy when -mmove-max/-mstore-max
// allow them, which with AVX-512 they do by default. -march=x86-64-v4 (and -march=native on
// AVX-512 CPUs) hits both literals; adding -mprefer-vector-width=256 still hits the 32-byte one;
// -mmove-max=128 -mstore-max=128 avoids it. AVX2 alone hits it too with -mmove-max=256
// -mstore-max=256, which is how a machine without AVX-512 can show whether its GCC has the bug.
// cmake/check_no_wide_slp.sh finds the pattern in any source from the compiler's output alone.
//
// What the test asserts: a build of the literals with Kestrel's AVX-512
// flags must read back right, and fails otherwise; the builds with the issue's flags are run and
// their results recorded (printed and as test properties) without failing, so that CI stays green
// on AVX-512 machines while the toolchain is broken and shows when it is fixed. Expecting the right
// values from the issue's flags would make every AVX-512 CI run red until the compiler changes,
// for a fault that is not Kestrel's and that Kestrel's flags already avoid.
//
// The values are checked element by element here, never against a vector literal: this file is
// compiled with Kestrel's usual flags, which on an AVX-512 machine may be the broken ones.
#include "tests/framework/core/avx512_slp_regression_helper.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

namespace kestrel {
namespace {

using Ids = std::vector<std::int64_t>;

#if defined(KESTREL_SLP_REGRESSION)

std::string show(const Ids& ids) {
  std::string s = "{";
  for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  return s + "}";
}

// ones leading 1s, then zeros, compared one element at a time.
bool is_mask(const Ids& ids, std::size_t ones, std::size_t zeros) {
  if (ids.size() != ones + zeros) return false;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] != (i < ones ? 1 : 0)) return false;
  }
  return true;
}

// {1, 1, 1, 0} made without a literal: a fill and one scalar store.
Ids right_mask4() {
  Ids ids(4, 1);
  ids[3] = 0;
  return ids;
}

// Why the x86-64-v4 copies cannot run here, or "" when they can.
std::string no_x86_64_v4() {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f")) return "this CPU has no AVX-512F: the miscompiled code cannot run here";
  if (!__builtin_cpu_supports("x86-64-v4")) {
    return "this CPU has AVX-512F but not all of x86-64-v4 (AVX-512 BW, CD, DQ, VL): the code built for it cannot "
           "run here";
  }
  return "";
}

struct Outcome {
  Ids mask4, mask8;
  bool literal_equals_right_mask4;
  bool right() const { return is_mask(mask4, 3, 1) && is_mask(mask8, 6, 2) && literal_equals_right_mask4; }
  std::string describe() const {
    return "Ids{1, 1, 1, 0} -> " + show(mask4) + ", Ids{1, 1, 1, 1, 1, 1, 0, 0} -> " + show(mask8) +
           ", ids == Ids{1, 1, 1, 0} for ids " + show(right_mask4()) + " -> " +
           (literal_equals_right_mask4 ? "true" : "false");
  }
};

#define KESTREL_SLP_OUTCOME(variant)                                                        \
  Outcome {                                                                                 \
    slp_regression::variant::attention_mask4(), slp_regression::variant::attention_mask8(), \
        slp_regression::variant::equals_attention_mask4(right_mask4())                      \
  }

// Prints and records what a copy built with known-bad flags produced; never fails.
void record(const char* property, const std::string& flags, const Outcome& outcome) {
  const std::string verdict = outcome.right()
                                  ? "right values: this compiler does not have the bug"
                                  : "WRONG values: this compiler has the GCC 12 wide-constant broadcast bug";
  std::cout << "[ NOTE     ] " << flags << ": " << outcome.describe() << " (" << verdict << ")\n";
  ::testing::Test::RecordProperty(property, outcome.describe());
}

TEST(Avx512SlpRegression, KestrelAvx512FlagsKeepVectorLiteralsIntact) {
  if (const std::string why = no_x86_64_v4(); !why.empty()) GTEST_SKIP() << why;
  // KESTREL_AVX512_FLAGS (cmake/KestrelCompileOptions.cmake): if this fails, those flags no
  // longer keep GCC away from the miscompile.
  const Outcome kestrel = KESTREL_SLP_OUTCOME(kestrel_flags);
  EXPECT_TRUE(is_mask(kestrel.mask4, 3, 1)) << "Ids{1, 1, 1, 0} read back as " << show(kestrel.mask4);
  EXPECT_TRUE(is_mask(kestrel.mask8, 6, 2)) << "Ids{1, 1, 1, 1, 1, 1, 0, 0} read back as " << show(kestrel.mask8);
  EXPECT_TRUE(kestrel.literal_equals_right_mask4) << "Ids{1, 1, 1, 0} compared unequal to " << show(right_mask4());
}

TEST(Avx512SlpRegression, RecordsWhatTheIssueFlagsProduce) {
  if (const std::string why = no_x86_64_v4(); !why.empty()) GTEST_SKIP() << why;
  record("issue_flags", "-O3 -march=x86-64-v4", KESTREL_SLP_OUTCOME(issue_flags));
  record("prefer256_flags", "-O3 -march=x86-64-v4 -mprefer-vector-width=256", KESTREL_SLP_OUTCOME(prefer256_flags));
}

TEST(Avx512SlpRegression, RecordsWhetherThisGccHasTheBugUsingAvx2) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("x86-64-v3")) {
    GTEST_SKIP() << "this CPU has no AVX2 (x86-64-v3): the code built for it cannot run here";
  }
  record("avx2_flags", "-O3 -march=x86-64-v3 -mmove-max=256 -mstore-max=256", KESTREL_SLP_OUTCOME(avx2_flags));
}

#else

TEST(Avx512SlpRegression, KestrelAvx512FlagsKeepVectorLiteralsIntact) {
  GTEST_SKIP() << "built only with GCC on x86-64: the miscompile is a GCC x86 backend bug";
}

#endif

}  // namespace
}  // namespace kestrel
