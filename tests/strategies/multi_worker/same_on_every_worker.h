// For the multi-worker tests: whether every worker holds the same bytes as the chief.
#pragma once

#include <cstring>
#include <vector>

#include "framework/core/tensor.h"
#include "strategies/workers.h"

namespace kestrel::testing {

/// True on every worker when every worker's tensors (their bytes, in order) equal the chief's.
inline bool same_on_every_worker(const std::vector<Tensor>& tensors) {
  const distribute::Workers& workers = *distribute::Workers::of_this_job();
  std::size_t bytes = 0;
  for (const Tensor& t : tensors) bytes += t.nbytes();
  std::vector<std::byte> all(bytes * static_cast<std::size_t>(workers.count()));
  std::byte* mine = all.data() + bytes * static_cast<std::size_t>(workers.index());
  for (const Tensor& t : tensors) {
    std::memcpy(mine, t.raw_data(), t.nbytes());
    mine += t.nbytes();
  }
  workers.gather_in_place(all);
  for (int w = 1; w < workers.count(); ++w) {
    if (std::memcmp(all.data(), all.data() + bytes * static_cast<std::size_t>(w), bytes) != 0) return false;
  }
  return true;
}

}  // namespace kestrel::testing
