// Compiled once per flag set, with KESTREL_SLP_VARIANT naming the namespace of that copy (see
// avx512_slp_regression_helper.h). Written as the failing tests write their expectations: a
// std::vector<std::int64_t> built from a literal. Nothing here is wrong C++; under GCC 12.2 with
// -O3 -march=x86-64-v4 the vector's 32-byte (or 64-byte) copy of the literal is stored as a
// broadcast of its first element, so {1, 1, 1, 0} reads back as {1, 1, 1, 1}.
//
// Without KESTREL_SLP_VARIANT (cmake/check_no_wide_slp.sh compiling this file on its own) the
// functions land in namespace kestrel::slp_regression::standalone.
#include "tests/framework/core/avx512_slp_regression_helper.h"

#ifndef KESTREL_SLP_VARIANT
#define KESTREL_SLP_VARIANT standalone
#endif

namespace kestrel::slp_regression::KESTREL_SLP_VARIANT {

using Ids = std::vector<std::int64_t>;

// noinline: the copies must keep their own flags, even in an LTO build.
[[gnu::noinline]] Ids attention_mask4() { return Ids{1, 1, 1, 0}; }

[[gnu::noinline]] Ids attention_mask8() { return Ids{1, 1, 1, 1, 1, 1, 0, 0}; }

[[gnu::noinline]] bool equals_attention_mask4(const Ids& ids) { return ids == Ids{1, 1, 1, 0}; }

}  // namespace kestrel::slp_regression::KESTREL_SLP_VARIANT
