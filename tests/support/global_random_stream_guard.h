// GlobalRandomStreamGuard: puts the global random stream (random::set_global_seed's, which weight
// initializers draw from) back where it was when a test that draws from it ends, so the tests
// after it in the executable draw what they would alone.
#pragma once

#include "framework/core/random.h"

namespace kestrel::testing {

class GlobalRandomStreamGuard {
 public:
  GlobalRandomStreamGuard() : saved_(random::global_stream_state()) {}
  ~GlobalRandomStreamGuard() { random::restore_global_stream(saved_); }
  GlobalRandomStreamGuard(const GlobalRandomStreamGuard&) = delete;
  GlobalRandomStreamGuard& operator=(const GlobalRandomStreamGuard&) = delete;

 private:
  random::GlobalStreamState saved_;
};

}  // namespace kestrel::testing
