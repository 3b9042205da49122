// Wall-clock seconds since a steady_clock time point: how the tutorials time what they print.
//
//   const auto start = std::chrono::steady_clock::now();
//   ... std::printf("trained in %.1f s\n", tutorials::seconds_since(start));
#pragma once

#include <chrono>

namespace kestrel::tutorials {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace kestrel::tutorials
