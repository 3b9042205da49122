// Reference-counted, 64-byte aligned storage for tensor data.
//
//   auto buf = Buffer::allocate(1024);       // 64-byte aligned, shared by handle
//   auto parts = Buffer::allocate_consecutive(4096, 8);   // 8 buffers, one after another in memory
//   allocator_stats().allocations;           // how many buffers were ever allocated
//
// The statistics let tests and benchmarks count allocations per step and peak bytes.
// Large freed blocks are cached and handed out again for the same size: a training step asks
// for the same sizes every step, and fresh memory from the OS costs a page fault per 4 KiB.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace kestrel {

class Buffer {
 public:
  static constexpr std::size_t kAlignment = 64;

  /// Allocates size bytes (uninitialized), aligned to kAlignment.
  static std::shared_ptr<Buffer> allocate(std::size_t size);
  /// `count` buffers of `size` bytes each, laid out one after another in one block (buffer i
  /// starts size * i bytes after buffer 0), which lives as long as any of them. Each is a buffer
  /// of its own to whoever holds it (its own handle and use count), so tensors built on them are
  /// reused and donated alone; a kernel may still read them together as one array (the replicas'
  /// rows of a compiled step, multiplied as the global batch's). `size` must be a multiple of
  /// kAlignment, so that every buffer is aligned: a ValueError otherwise. One allocation in the
  /// statistics.
  static std::vector<std::shared_ptr<Buffer>> allocate_consecutive(std::size_t size, std::size_t count);

  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  Buffer(void* data, std::size_t size, std::size_t capacity) : data_(data), size_(size), capacity_(capacity) {}
  void* data_;
  std::size_t size_;
  std::size_t capacity_;           // the block's rounded size, its key in the cache
  std::shared_ptr<Buffer> block_;  // the block a consecutive buffer lies in (null: data_ is its own)
};

struct AllocatorStats {
  std::int64_t allocations = 0;  ///< buffers allocated since start
  std::int64_t bytes_in_use = 0;
  std::int64_t peak_bytes_in_use = 0;
  std::int64_t cached_bytes = 0;  ///< freed blocks kept for reuse (not in use)
};

/// A snapshot of the process-wide buffer statistics.
AllocatorStats allocator_stats();
/// Resets the peak to the current bytes in use (e.g. before measuring one step).
void reset_peak_bytes_in_use();

/// Most bytes the cache of freed blocks may hold (default 1 GiB); 0 turns caching off.
void set_buffer_cache_limit(std::size_t bytes);
/// Returns every cached block to the system.
void release_cached_buffers();

}  // namespace kestrel
