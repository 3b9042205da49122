// AlignedBuffer: kernels' per-thread scratch, aligned for vector loads, reallocated only to grow.
#include "framework/ops/kernels/aligned_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "framework/core/dtype.h"

namespace kestrel::kernels {
namespace {

TEST(AlignedBuffer, IsAlignedAndGrowsOnlyWhenAskedForMore) {
  AlignedBuffer<float> buffer;
  float* first = buffer.get(100);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first) % AlignedBuffer<float>::kAlignment, 0u);
  first[99] = 7.0f;
  EXPECT_EQ(buffer.get(10), first) << "a smaller request reuses the memory";
  EXPECT_EQ(buffer.get(100)[99], 7.0f) << "and keeps its contents";
  float* grown = buffer.get(1 << 20);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(grown) % AlignedBuffer<float>::kAlignment, 0u);
  grown[(1 << 20) - 1] = 1.0f;  // the whole count is usable (AddressSanitizer checks it in CI)

  AlignedBuffer<bfloat16> narrow;
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(narrow.get(3)) % AlignedBuffer<bfloat16>::kAlignment, 0u);
}

}  // namespace
}  // namespace kestrel::kernels
