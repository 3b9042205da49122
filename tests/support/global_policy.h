// ScopedGlobalPolicy: sets the global precision policy for a test and restores the one before it
// when the test ends, so no policy leaks into the tests that run after.
//
//   TEST(Mixed, Dense) {
//     testing::ScopedGlobalPolicy mixed("mixed_bfloat16");
//     layers::Dense dense(4);   // float32 kernel, bfloat16 compute
//   }
#pragma once

#include "framework/layers/dtype_policy.h"

namespace kestrel::testing {

class ScopedGlobalPolicy {
 public:
  explicit ScopedGlobalPolicy(const DTypePolicy& policy) : previous_(mixed_precision::global_policy()) {
    mixed_precision::set_global_policy(policy);
  }
  ~ScopedGlobalPolicy() { mixed_precision::set_global_policy(previous_); }
  ScopedGlobalPolicy(const ScopedGlobalPolicy&) = delete;
  ScopedGlobalPolicy& operator=(const ScopedGlobalPolicy&) = delete;

 private:
  DTypePolicy previous_;
};

}  // namespace kestrel::testing
