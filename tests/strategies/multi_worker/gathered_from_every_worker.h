// For the multi-worker tests: every worker's values, gathered on every worker.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "strategies/workers.h"

namespace kestrel::testing {

/// Every worker's values (each may bring a different number, none of them -1), in worker order.
inline std::vector<std::int64_t> gathered_from_every_worker(const std::vector<std::int64_t>& mine) {
  const distribute::Workers& workers = *distribute::Workers::of_this_job();
  // Each worker's block padded with -1 to the longest, then the padding dropped.
  const auto longest = static_cast<std::size_t>(workers.max(static_cast<std::int64_t>(mine.size())));
  std::vector<std::int64_t> all(longest * static_cast<std::size_t>(workers.count()), -1);
  std::copy(mine.begin(), mine.end(), all.begin() + static_cast<std::ptrdiff_t>(longest * workers.index()));
  workers.gather_in_place(std::as_writable_bytes(std::span(all)));
  std::erase(all, -1);
  return all;
}

}  // namespace kestrel::testing
