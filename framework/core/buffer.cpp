#include "framework/core/buffer.h"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include "framework/core/error.h"

namespace kestrel {
namespace {

std::atomic<std::int64_t> g_allocations{0};
std::atomic<std::int64_t> g_bytes_in_use{0};
std::atomic<std::int64_t> g_peak_bytes{0};

void raise_peak(std::int64_t now) {
  std::int64_t peak = g_peak_bytes.load(std::memory_order_relaxed);
  while (now > peak && !g_peak_bytes.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

// Smaller blocks come from malloc's own free lists, which already reuse memory cheaply.
constexpr std::size_t kMinCachedBlock = std::size_t{1} << 18;

// Freed blocks by exact rounded size.
class BlockCache {
 public:
  void* take(std::size_t capacity) {
    if (capacity < kMinCachedBlock) return nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = free_.find(capacity);
    if (found == free_.end() || found->second.empty()) return nullptr;
    void* block = found->second.back();
    found->second.pop_back();
    cached_bytes_ -= capacity;
    return block;
  }

  /// Keeps the block if it fits under the limit; otherwise frees it.
  void give(void* block, std::size_t capacity) {
    if (capacity >= kMinCachedBlock) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (cached_bytes_ + capacity <= limit_) {
        free_[capacity].push_back(block);
        cached_bytes_ += capacity;
        return;
      }
    }
    std::free(block);
  }

  void set_limit(std::size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    limit_ = bytes;
    trim_locked();
  }

  void release() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t saved = limit_;
    limit_ = 0;
    trim_locked();
    limit_ = saved;
  }

  std::int64_t cached_bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<std::int64_t>(cached_bytes_);
  }

 private:
  void trim_locked() {
    for (auto it = free_.begin(); it != free_.end() && cached_bytes_ > limit_;) {
      while (!it->second.empty() && cached_bytes_ > limit_) {
        std::free(it->second.back());
        it->second.pop_back();
        cached_bytes_ -= it->first;
      }
      it = it->second.empty() ? free_.erase(it) : std::next(it);
    }
  }

  std::mutex mutex_;
  std::unordered_map<std::size_t, std::vector<void*>> free_;
  std::size_t cached_bytes_ = 0;
  std::size_t limit_ = std::size_t{1} << 30;
};

BlockCache& block_cache() {
  // Never destroyed: buffers held by static tensors may be freed after main returns.
  static BlockCache* cache = new BlockCache();
  return *cache;
}

}  // namespace

std::shared_ptr<Buffer> Buffer::allocate(std::size_t size) {
  // Near the top of size_t, rounding up would wrap to a tiny block that claims `size` bytes,
  // and the int64 statistics would overflow.
  if (size > static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max()) - kAlignment) throw std::bad_alloc();
  // aligned_alloc needs a size that is a multiple of the alignment; never ask for 0 bytes.
  std::size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  void* data = block_cache().take(rounded);
#ifndef NDEBUG
  // Debug builds fill reused blocks with NaN bytes, so a kernel that reads before it writes shows.
  if (data != nullptr) std::memset(data, 0xFF, rounded);
#endif
  if (data == nullptr) data = std::aligned_alloc(kAlignment, rounded);
  if (data == nullptr) {
    release_cached_buffers();  // the cache may hold what the system is missing
    data = std::aligned_alloc(kAlignment, rounded);
  }
  if (data == nullptr) throw std::bad_alloc();
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  raise_peak(g_bytes_in_use.fetch_add(static_cast<std::int64_t>(size), std::memory_order_relaxed) +
             static_cast<std::int64_t>(size));
  return std::shared_ptr<Buffer>(new Buffer(data, size, rounded));
}

std::vector<std::shared_ptr<Buffer>> Buffer::allocate_consecutive(std::size_t size, std::size_t count) {
  if (size % kAlignment != 0) {
    throw ValueError("Buffer::allocate_consecutive: buffers of " + std::to_string(size) +
                     " bytes would not all start on a " + std::to_string(kAlignment) +
                     "-byte boundary; ask for a multiple of " + std::to_string(kAlignment));
  }
  if (count != 0 && size > std::numeric_limits<std::size_t>::max() / count) throw std::bad_alloc();
  std::shared_ptr<Buffer> block = allocate(size * count);
  std::vector<std::shared_ptr<Buffer>> parts;
  parts.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    std::shared_ptr<Buffer> part(new Buffer(static_cast<std::byte*>(block->data()) + size * i, size, 0));
    part->block_ = block;
    parts.push_back(std::move(part));
  }
  return parts;
}

Buffer::~Buffer() {
  if (block_) return;  // a part of a block: the block's own handle frees it
  g_bytes_in_use.fetch_sub(static_cast<std::int64_t>(size_), std::memory_order_relaxed);
  block_cache().give(data_, capacity_);
}

AllocatorStats allocator_stats() {
  return {g_allocations.load(), g_bytes_in_use.load(), g_peak_bytes.load(), block_cache().cached_bytes()};
}

void set_buffer_cache_limit(std::size_t bytes) { block_cache().set_limit(bytes); }
void release_cached_buffers() { block_cache().release(); }

void reset_peak_bytes_in_use() { g_peak_bytes.store(g_bytes_in_use.load()); }

}  // namespace kestrel
