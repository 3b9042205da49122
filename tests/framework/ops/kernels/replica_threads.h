// Runs a kernel call on several threads at once, as replicas run their kernels (each under its
// own SerialKernelsScope), for tests that the bits do not depend on which thread computes them.
//
//   for (const auto& r : on_replica_threads(4, [&] { return product(l, true); })) EXPECT_TRUE(same_bits(r, pooled));
#pragma once

#include <cstddef>
#include <thread>
#include <vector>

namespace kestrel::testing {

/// fn()'s result on each of `count` threads started together.
template <class Fn>
auto on_replica_threads(int count, Fn fn) {
  std::vector<decltype(fn())> results(static_cast<std::size_t>(count));
  std::vector<std::thread> threads;
  for (auto& r : results) threads.emplace_back([&r, &fn] { r = fn(); });
  for (std::thread& t : threads) t.join();
  return results;
}

}  // namespace kestrel::testing
