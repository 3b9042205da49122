// same_bits: two results equal bit for bit, for the tests that check a value is reproduced exactly
// (run to run, thread count to thread count, fused against unfused) rather than approximately.
#pragma once

#include <cstring>
#include <vector>

#include "framework/core/tensor.h"

namespace kestrel::testing {

/// The same dtype, shape and bytes; two undefined tensors are the same.
inline bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  return a.spec() == b.spec() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace kestrel::testing
