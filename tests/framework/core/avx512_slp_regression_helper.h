// The GCC 12.2 wide-constant miscompile behind the Pad.PadsEncodingsFromElsewhere and
// CausalLmBatch.ShiftsLabelsAndIgnoresPadding failures on AVX-512 machines, reduced to the two
// literals those tests compare against. avx512_slp_regression_helper.cpp is compiled once per
// flag set below, each copy in its own namespace and static library (tests/framework/core/
// CMakeLists.txt); avx512_slp_regression_test.cpp runs the copies the CPU can execute.
#pragma once

#include <cstdint>
#include <vector>

namespace kestrel::slp_regression {

// One copy of the helper: what its literals read back as, compiled with one set of flags.
#define KESTREL_SLP_REGRESSION_DECLARE(variant)                                          \
  namespace variant {                                                                    \
  /* Ids{1, 1, 1, 0}: encode_test.cpp's attention mask, a 32-byte copy. */               \
  std::vector<std::int64_t> attention_mask4();                                           \
  /* Ids{1, 1, 1, 1, 1, 1, 0, 0}: gpt_data_test.cpp's attention mask, a 64-byte copy. */ \
  std::vector<std::int64_t> attention_mask8();                                           \
  /* ids == Ids{1, 1, 1, 0}, the comparison as EXPECT_EQ makes it. */                    \
  bool equals_attention_mask4(const std::vector<std::int64_t>& ids);                     \
  }

// -O3 -march=x86-64-v4: the flags of the failing build (-march=native on a Zen 5 is the same
// for this). Runs on x86-64-v4 CPUs only.
KESTREL_SLP_REGRESSION_DECLARE(issue_flags)
// -O3 -march=x86-64-v4 -mprefer-vector-width=256: no 512-bit vectorization, but GCC still
// copies 32 bytes as one wide integer, so the 4-element literal is still miscompiled.
KESTREL_SLP_REGRESSION_DECLARE(prefer256_flags)
// Kestrel's AVX-512 flags: the above plus -mmove-max=128 -mstore-max=128, which keep GCC from
// making 32- and 64-byte integer constants at all. Must give the right values.
KESTREL_SLP_REGRESSION_DECLARE(kestrel_flags)
// -O3 -march=x86-64-v3 -mmove-max=256 -mstore-max=256: the same GCC bug with AVX2 alone, so a
// machine without AVX-512 can show whether its GCC has it.
KESTREL_SLP_REGRESSION_DECLARE(avx2_flags)

#undef KESTREL_SLP_REGRESSION_DECLARE

}  // namespace kestrel::slp_regression
