#include "framework/core/buffer.h"

#include <atomic>
#include <cstdlib>
#include <limits>
#include <new>

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

}  // namespace

std::shared_ptr<Buffer> Buffer::allocate(std::size_t size) {
  // Near the top of size_t, rounding up would wrap to a tiny block that claims `size` bytes,
  // and the int64 statistics would overflow.
  if (size > static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max()) - kAlignment) throw std::bad_alloc();
  // aligned_alloc needs a size that is a multiple of the alignment; never ask for 0 bytes.
  std::size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  void* data = std::aligned_alloc(kAlignment, rounded);
  if (data == nullptr) throw std::bad_alloc();
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  raise_peak(g_bytes_in_use.fetch_add(static_cast<std::int64_t>(size), std::memory_order_relaxed) +
             static_cast<std::int64_t>(size));
  return std::shared_ptr<Buffer>(new Buffer(data, size));
}

Buffer::~Buffer() {
  g_bytes_in_use.fetch_sub(static_cast<std::int64_t>(size_), std::memory_order_relaxed);
  std::free(data_);
}

AllocatorStats allocator_stats() {
  return {g_allocations.load(), g_bytes_in_use.load(), g_peak_bytes.load()};
}

void reset_peak_bytes_in_use() { g_peak_bytes.store(g_bytes_in_use.load()); }

}  // namespace kestrel
