// For the multi-worker tests: the workers of the job mpirun started, which every test runs on.
#pragma once

#include "strategies/workers.h"

namespace kestrel::testing {

inline const distribute::Workers& workers() { return *distribute::Workers::of_this_job(); }

}  // namespace kestrel::testing
