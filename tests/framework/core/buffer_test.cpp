// Buffer alignment, consecutive buffers in one block, and the allocator statistics.
#include "framework/core/buffer.h"

#include <gtest/gtest.h>

#include "framework/core/error.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

namespace kestrel {
namespace {

bool is_aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % Buffer::kAlignment == 0; }

TEST(Buffer, AlignmentIsSixtyFourBytes) { EXPECT_EQ(Buffer::kAlignment, 64u); }

TEST(Buffer, ConsecutiveBuffersLieOneAfterAnotherAndAreEachTheirOwn) {
  const std::int64_t allocations = allocator_stats().allocations;
  const std::int64_t in_use = allocator_stats().bytes_in_use;
  std::vector<std::shared_ptr<Buffer>> parts = Buffer::allocate_consecutive(256, 4);
  EXPECT_EQ(allocator_stats().allocations, allocations + 1);  // one block
  EXPECT_EQ(allocator_stats().bytes_in_use, in_use + 1024);
  ASSERT_EQ(parts.size(), 4u);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    EXPECT_EQ(parts[i]->size(), 256u);
    EXPECT_EQ(static_cast<std::byte*>(parts[i]->data()), static_cast<std::byte*>(parts[0]->data()) + 256 * i);
    EXPECT_TRUE(is_aligned(parts[i]->data()));
    EXPECT_EQ(parts[i].use_count(), 1);  // nobody else holds a part: a tensor on it is its sole owner
  }
  // The block lives while any part does, and goes with the last.
  std::shared_ptr<Buffer> last = parts[3];
  std::memset(last->data(), 7, last->size());
  parts.clear();
  EXPECT_EQ(allocator_stats().bytes_in_use, in_use + 1024);
  EXPECT_EQ(static_cast<unsigned char*>(last->data())[255], 7);
  last.reset();
  EXPECT_EQ(allocator_stats().bytes_in_use, in_use);
}

TEST(Buffer, ConsecutiveBuffersOfAnUnalignedSizeAreAValueError) {
  try {
    Buffer::allocate_consecutive(100, 3);
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("buffers of 100 bytes would not all start on a 64-byte boundary"),
              std::string::npos)
        << e.what();
  }
}

TEST(Buffer, ManyOddSizedAllocationsAreAllAligned) {
  std::vector<std::shared_ptr<Buffer>> live;
  for (std::size_t size : {1u, 3u, 7u, 63u, 65u, 127u, 129u, 1000u, 4097u, 65537u, 1000003u}) {
    for (int repeat = 0; repeat < 20; ++repeat) {
      auto buf = Buffer::allocate(size + static_cast<std::size_t>(repeat));
      ASSERT_NE(buf->data(), nullptr);
      EXPECT_TRUE(is_aligned(buf->data())) << "size " << buf->size();
      EXPECT_EQ(buf->size(), size + static_cast<std::size_t>(repeat));
      live.push_back(std::move(buf));
    }
  }
}

TEST(Buffer, TheWholeRequestedSizeIsWritable) {
  auto buf = Buffer::allocate(1001);
  std::memset(buf->data(), 0xab, buf->size());
  const auto* bytes = static_cast<const unsigned char*>(std::as_const(*buf).data());
  EXPECT_EQ(bytes[0], 0xab);
  EXPECT_EQ(bytes[1000], 0xab);
}

TEST(Buffer, ZeroSizeAllocationGivesAnAlignedNonNullBuffer) {
  auto buf = Buffer::allocate(0);
  EXPECT_EQ(buf->size(), 0u);
  EXPECT_NE(buf->data(), nullptr);
  EXPECT_TRUE(is_aligned(buf->data()));
}

TEST(Buffer, ASizeThatWouldWrapWhenRoundedUpIsRefused) {
  AllocatorStats before = allocator_stats();
  EXPECT_THROW(Buffer::allocate(std::numeric_limits<std::size_t>::max() - 10), std::bad_alloc);
  EXPECT_THROW(Buffer::allocate(std::numeric_limits<std::size_t>::max()), std::bad_alloc);
  EXPECT_EQ(allocator_stats().allocations, before.allocations);
  EXPECT_EQ(allocator_stats().bytes_in_use, before.bytes_in_use);
}

TEST(AllocatorStats, EachAllocationIncrementsTheCounter) {
  std::int64_t before = allocator_stats().allocations;
  {
    auto a = Buffer::allocate(10);
    auto b = Buffer::allocate(0);
    auto c = Buffer::allocate(12345);
    EXPECT_EQ(allocator_stats().allocations, before + 3);
  }
  // Freeing does not decrement: the counter counts allocations ever made.
  EXPECT_EQ(allocator_stats().allocations, before + 3);
}

TEST(AllocatorStats, SharingAHandleDoesNotAllocate) {
  auto a = Buffer::allocate(100);
  std::int64_t before = allocator_stats().allocations;
  std::shared_ptr<Buffer> b = a;
  EXPECT_EQ(allocator_stats().allocations, before);
  EXPECT_EQ(b->data(), a->data());
}

TEST(AllocatorStats, BytesInUseCountRequestedBytesAndReturnAfterFree) {
  std::int64_t base = allocator_stats().bytes_in_use;
  auto a = Buffer::allocate(1000);
  EXPECT_EQ(allocator_stats().bytes_in_use, base + 1000);
  auto b = Buffer::allocate(24);
  EXPECT_EQ(allocator_stats().bytes_in_use, base + 1024);
  a.reset();
  EXPECT_EQ(allocator_stats().bytes_in_use, base + 24);
  b.reset();
  EXPECT_EQ(allocator_stats().bytes_in_use, base);
}

TEST(AllocatorStats, BufferLivesUntilItsLastHandleIsDropped) {
  std::int64_t base = allocator_stats().bytes_in_use;
  auto a = Buffer::allocate(512);
  std::shared_ptr<Buffer> b = a;
  a.reset();
  EXPECT_EQ(allocator_stats().bytes_in_use, base + 512);
  b.reset();
  EXPECT_EQ(allocator_stats().bytes_in_use, base);
}

TEST(AllocatorStats, PeakTracksTheHighWaterMarkAndResets) {
  reset_peak_bytes_in_use();
  std::int64_t base = allocator_stats().bytes_in_use;
  EXPECT_EQ(allocator_stats().peak_bytes_in_use, base);
  {
    auto a = Buffer::allocate(4096);
    auto b = Buffer::allocate(2048);
  }
  EXPECT_EQ(allocator_stats().bytes_in_use, base);
  EXPECT_EQ(allocator_stats().peak_bytes_in_use, base + 6144);
  reset_peak_bytes_in_use();
  EXPECT_EQ(allocator_stats().peak_bytes_in_use, base);
  auto c = Buffer::allocate(100);
  EXPECT_EQ(allocator_stats().peak_bytes_in_use, base + 100);
}

}  // namespace
}  // namespace kestrel

namespace kestrel {
namespace {

TEST(BufferCache, AFreedLargeBlockIsReusedForTheSameSize) {
  release_cached_buffers();
  constexpr std::size_t kSize = std::size_t{1} << 20;
  const void* first;
  {
    auto a = Buffer::allocate(kSize);
    first = a->data();
  }
  EXPECT_GE(allocator_stats().cached_bytes, static_cast<std::int64_t>(kSize));
  auto b = Buffer::allocate(kSize);
  EXPECT_EQ(b->data(), first);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b->data()) % Buffer::kAlignment, 0u);
}

TEST(BufferCache, CachedBytesDoNotCountAsInUse) {
  release_cached_buffers();
  std::int64_t before = allocator_stats().bytes_in_use;
  { auto a = Buffer::allocate(std::size_t{1} << 20); }
  EXPECT_EQ(allocator_stats().bytes_in_use, before);
}

TEST(BufferCache, ReleaseEmptiesTheCache) {
  { auto a = Buffer::allocate(std::size_t{1} << 20); }
  release_cached_buffers();
  EXPECT_EQ(allocator_stats().cached_bytes, 0);
}

TEST(BufferCache, ALimitOfZeroTurnsCachingOff) {
  release_cached_buffers();
  set_buffer_cache_limit(0);
  { auto a = Buffer::allocate(std::size_t{1} << 20); }
  EXPECT_EQ(allocator_stats().cached_bytes, 0);
  set_buffer_cache_limit(std::size_t{1} << 30);
}

TEST(BufferCache, SmallBlocksAreLeftToMalloc) {
  release_cached_buffers();
  { auto a = Buffer::allocate(1024); }
  EXPECT_EQ(allocator_stats().cached_bytes, 0);
}

}  // namespace
}  // namespace kestrel
